"""The cot study: chain of thought, in-context weight prediction and looping (study.py)."""
