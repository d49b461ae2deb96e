"""The linear self-attention model, ``lsa``, in one room: its options (``options``), one layer
(``layer``: ``LinearSelfAttention``, the registered ``lsa``), the L-layer stack (``deep``),
the forward on whole prompts (``prompts``), on Gaussian statistics (``statistics``) and on Z
(``deep_statistics``), and the losses whose gradients are worked out by hand
(``statistics_loss``, ``hand_gradients``)."""
