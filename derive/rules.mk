# derive/rules.mk - the derivation rules and their tests (see derive/RULES.md)
