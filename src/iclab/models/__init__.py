"""Attention models trained on in-context regression prompts."""

from iclab.models.lsa import LinearSelfAttention, LSAOptions

__all__ = ["LSAOptions", "LinearSelfAttention"]
