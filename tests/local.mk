# tests/local.mk - the suites that run the whole driver.  Unit tests of
# each phase are listed in that phase's local.mk.
TESTS += tests/golden.test tests/cli.test
EXTRA_DIST += tests/golden.test tests/cli.test tests/golden
