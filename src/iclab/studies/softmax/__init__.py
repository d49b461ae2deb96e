"""The softmax study: one layer of softmax attention (declared in ``study``)."""
