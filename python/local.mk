# python/local.mk - the Python module einc (python/einc), installed by
# `make install` where Debian's python3 finds modules (configure's
# pythondir); the tests import it from the source tree.
if HAVE_PYTHON
pkgpython_PYTHON = python/einc/__init__.py python/einc/safetensors.py
endif
TESTS += tests/python.test
EXTRA_DIST += python/README.md tests/python.test tests/python/test_einc.py
