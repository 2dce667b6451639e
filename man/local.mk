# man/local.mk - included from the top-level Makefile.am.  The manual
# pages: einc(1), the command, and ein(5), the language.  tests/man.test
# lints them and compiles the programs of their EXAMPLES sections.
dist_man_MANS += man/einc.1 man/ein.5
TESTS += tests/man.test
EXTRA_DIST += tests/man.test
