"""A decoder-only GPT-style transformer read out at every x position (Garg et al. 2022)."""
