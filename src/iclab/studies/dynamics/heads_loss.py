"""The exact population loss of multi-head linear attention as a function of its raw
parameters, float64, with its gradient worked out by hand (docs/theory.md section 18).

Held nuisance-free (the values read only the label, keys and queries only the inputs), H heads
predict yhat = x_q^T Gamma X^T y with

    merged:   Gamma = sum_h v_h W_h^T,          v: (H,), W: (H, d, d)
    separate: Gamma = sum_h v_h Q_h^T K_h,      v: (H,), K, Q: (H, R, d)

(divided by n when the model normalises). The loss is the theory's L(Gamma)
(``iclab.theory.gaussian``): L = c0 - 2n tr(Gamma X) + n tr(S Gamma K Gamma^T) with S = Sigma_x,
X = S Sigma_w S, K the second moment of X^T y over n, so dL/dGamma = 2n (S Gamma K - X); the
chain rule gives the parameters' gradients. theta is the flat vector [v, W] or [v, K, Q].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from iclab.theory.gaussian import covariances, gd_term_loss, second_moment_K
from iclab.utils.errors import ConfigError

KQ_KINDS = ("merged", "separate")


@dataclass(frozen=True)
class HeadsLoss:
    """The exact loss of H heads (``kq`` merged or separate, key rank R) on one linear Gaussian
    task (n, sigma, Sigma_x, Sigma_w), as a function of the flat parameter vector theta."""

    kq: str
    heads: int
    rank: int
    n: int
    sigma: float
    sigma_x: np.ndarray
    sigma_w: np.ndarray
    normalise: bool = False

    def __post_init__(self) -> None:
        if self.kq not in KQ_KINDS:
            raise ConfigError(f"kq must be one of {', '.join(KQ_KINDS)}; got {self.kq!r}")
        for name in ("heads", "rank", "n"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
        sx, sw = covariances(self.sigma_x, self.sigma_w)
        object.__setattr__(self, "sigma_x", sx)
        object.__setattr__(self, "sigma_w", sw)
        object.__setattr__(self, "_K", second_moment_K(self.n, self.sigma, sx, sw))
        object.__setattr__(self, "_X", sx @ sw @ sx)
        object.__setattr__(self, "_c0", float(np.trace(sx @ sw)) + self.sigma**2)

    @property
    def d(self) -> int:
        return int(self.sigma_x.shape[0])

    @property
    def size(self) -> int:
        """The length of theta."""
        H, R, d = self.heads, self.rank, self.d
        return H + (H * d * d if self.kq == "merged" else 2 * H * R * d)

    @property
    def zero_loss(self) -> float:
        """The loss of Gamma = 0: tr(Sigma_x Sigma_w) + sigma^2."""
        return float(self._c0)  # type: ignore[attr-defined]

    def split(self, theta: np.ndarray) -> tuple[np.ndarray, ...]:
        """theta -> (v,(H,)), W (H, d, d)) or (v, K (H, R, d), Q (H, R, d)), views."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise ConfigError(f"theta must have shape ({self.size},), got {theta.shape}")
        H, R, d = self.heads, self.rank, self.d
        v = theta[:H]
        if self.kq == "merged":
            return v, theta[H:].reshape(H, d, d)
        half = H * R * d
        return v, theta[H:H + half].reshape(H, R, d), theta[H + half:].reshape(H, R, d)

    def join(self, *parts: np.ndarray) -> np.ndarray:
        """The inverse of ``split``: the flat float64 theta."""
        theta = np.concatenate([np.asarray(p, dtype=np.float64).reshape(-1) for p in parts])
        self.split(theta)
        return theta

    def gamma(self, theta: np.ndarray) -> np.ndarray:
        """Gamma: (d, d), the 1/n of a normalising model folded in."""
        parts = self.split(theta)
        if self.kq == "merged":
            v, W = parts
            gamma = np.tensordot(v, W, axes=1).T
        else:
            v, K, Q = parts
            H, R, d = self.heads, self.rank, self.d
            gamma = (np.repeat(v, R)[:, None] * Q.reshape(H * R, d)).T @ K.reshape(H * R, d)
        return gamma / self.n if self.normalise else gamma

    def loss(self, theta: np.ndarray) -> float:
        """The exact population loss at theta (``iclab.theory.gaussian.gd_term_loss``)."""
        return gd_term_loss(self.gamma(theta), self.n, self.sigma, self.sigma_x, self.sigma_w)

    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """dL/dtheta: (size,), by the chain rule from dL/dGamma = 2n (S Gamma K - X)."""
        S, K, X = self.sigma_x, self._K, self._X  # type: ignore[attr-defined]
        G = 2 * self.n * (S @ self.gamma(theta) @ K - X)
        if self.normalise:
            G = G / self.n
        parts = self.split(theta)
        H, R, d = self.heads, self.rank, self.d
        if self.kq == "merged":
            v, W = parts
            grad_v = (W * G.T[None]).reshape(H, -1).sum(1)
            return self.join(grad_v, v[:, None, None] * G.T[None])
        v, Kh, Qh = parts
        keys, queries = Kh.reshape(H * R, d), Qh.reshape(H * R, d)
        qg, kg = queries @ G, keys @ G.T                         # (H R, d) each
        grad_v = (qg * keys).reshape(H, -1).sum(1)
        scale = np.repeat(v, R)[:, None]
        return self.join(grad_v, scale * qg, scale * kg)
