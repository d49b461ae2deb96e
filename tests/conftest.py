"""Shared test settings: deterministic CPU torch, a small hypothesis budget."""

from __future__ import annotations

import torch
from hypothesis import settings

settings.register_profile("iclab", max_examples=40, deadline=None)
settings.load_profile("iclab")
torch.set_num_threads(2)
