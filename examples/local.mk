# examples/local.mk - included from the top-level Makefile.am.  The example
# programs ship in the tarball; check-examples.test runs the checker over
# every one of them (and the seven models again at batch 16).
EXTRA_DIST += examples/README.md \
	examples/conv_relu.ein examples/transposed_conv.ein \
	examples/maxpool.ein examples/g2bmm.ein examples/blocks.ein \
	examples/resblock.ein examples/matmul.ein examples/softmax.ein \
	examples/layernorm.ein examples/reshape.ein \
	examples/infogan.ein examples/dcgan.ein examples/fsrcnn.ein \
	examples/gcn.ein examples/resnet18.ein examples/csrnet.ein \
	examples/longformer.ein examples/tinylm.ein \
	examples/bert.ein examples/gpt2.ein examples/mobilenetv2.ein \
	examples/unet.ein \
	examples/check-examples.test
TESTS += examples/check-examples.test
