# div16.sed - as div8.sed, channel counts divided by 16, and GCN's 85
# (its hidden width) cut to 6.
s/\b64\b/4/g
s/\b128\b/8/g
s/\b256\b/16/g
s/\b512\b/32/g
s/\b1024\b/64/g
s/\b2048\b/128/g
s/\b85\b/6/g
