"""The transformer study: a GPT-style transformer and its prefix curves (declared in
``study``)."""
