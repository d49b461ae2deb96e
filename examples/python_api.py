# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # iclab from Python
#
# Train one-layer linear self-attention on linear regression prompts, read out the
# preconditioner Gamma it learned, and plot the theory beside the run: the optimal step
# size is eta* = 1/(n + d + 1 + sigma^2) (docs/theory.md). Open this file in Jupyter with
# jupytext (`jupytext --to ipynb examples/python_api.py`) or run it as a script.

# %%
import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no window: the figures are saved (and shown inline in Jupyter)
import matplotlib.pyplot as plt
import numpy as np

import iclab

out = Path(os.environ.get("ICLAB_EXAMPLE_OUT") or tempfile.mkdtemp(prefix="iclab-example-"))
d, n, sigma = 5, 20, 0.5

# %% [markdown]
# ## Train
# The keywords are `iclab train`'s options (`help(iclab.train)` lists them all). A bad one
# raises `iclab.Error` with the command line's one-line message.

# %%
try:
    iclab.train(d=0, n=n, out=out / "bad")
except iclab.Error as error:
    print("refused:", error)

run = iclab.train(d=d, n=n, sigma=sigma, seed=0, steps=1000, out=out / "run")
print(run.verdict, run.eta_hat, run.test_loss, run.loss_star)

# %% [markdown]
# ## Gamma
# The read-out's Gamma (d x d) is eta* times the identity at the optimum.

# %%
gamma = np.array(run.gamma)
eta_star = 1 / (n + d + 1 + sigma**2)
print("diagonal of Gamma:", np.round(np.diag(gamma), 5))
print("eta* = 1/(n+d+1+sigma^2) =", round(eta_star, 6), "; the run's eta_star:",
      round(run.eta_star, 6))
print("largest off-diagonal entry:", np.abs(gamma - np.diag(np.diag(gamma))).max())

# %% [markdown]
# ## The theory beside the run
# Left: the learned step size eta_hat during training, against eta*. Right: the optimal
# loss L* as the optimum's closed form (`iclab.theory`) over n, with the trained run's
# test loss at its n.

# %%
metrics = run.metrics()
theory = [iclab.theory(d=d, n=m, sigma=sigma, bayes_prompts=0) for m in range(5, 41, 5)]
figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
left.plot([m["step"] for m in metrics], [m["eta_hat"] for m in metrics], label="eta_hat")
left.axhline(eta_star, color="k", linestyle="--", label="eta* (theory)")
left.set_xlabel("step")
left.legend()
right.plot(range(5, 41, 5), [t.loss for t in theory], "k--", label="L* (theory)")
right.errorbar([n], [run.test_loss], yerr=[run.test_loss_stderr], fmt="o", label="trained")
right.set_xlabel("n")
right.set_ylabel("loss")
right.legend()
figure.savefig(out / "theory_beside_run.png", dpi=80)
print("figure:", out / "theory_beside_run.png")

# %%
assert abs(run.eta_hat / eta_star - 1) < 0.05, "the trained step size is off the theory"
