# div8.sed - a model's channel counts divided by 8, for the tests that run
# a whole model where its declared sizes would take minutes (sed -E -f;
# smallest first, so that no number is rewritten twice).
s/\b64\b/8/g
s/\b128\b/16/g
s/\b256\b/32/g
s/\b512\b/64/g
s/\b1024\b/128/g
s/\b2048\b/256/g
