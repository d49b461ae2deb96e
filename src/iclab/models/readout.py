"""The linear algorithm a model implements, as first-class matrices (docs/theory.md section 2).

Every one-layer LSA prediction is yhat = u^T Z M x_q with Z = sum_i e_i e_i^T, e_i = [x_i; y_i],
u = [u_x; u_y]: (d+1,) and M = [M_x; m_y^T]: (d+1, d). Expanded,

    yhat = x_q^T (u_y M_x^T) X^T y + x_q^T (m_y u_x^T) X^T y      (the terms linear in y)
         + u_x^T X^T X M_x x_q + u_y (y^T y)(m_y^T x_q)            (nuisance: even in y)

so the effective matrix is the whole coefficient of the linear terms,
Gamma = u_y M_x^T + m_y u_x^T, and a model holding its Gamma in either part implements the same
algorithm. ``LinearReadout`` holds (u, M) in float64 with any 1/n normalisation folded into M,
so Gamma is directly comparable with eta* and Gamma*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinearReadout:
    """u: (d+1,), M: (d+1, d), float64, in the convention yhat = u^T Z M x_q (+ nuisance).

    complete: the model's prediction is exactly u^T Z M x_q (False when it adds terms the
    read-out does not hold, such as the LSA's attend-to-query term): only then is the exact
    population loss of (u, M) the model's loss.
    """

    u: np.ndarray
    M: np.ndarray
    complete: bool = True

    @classmethod
    def from_gamma(cls, gamma: np.ndarray) -> LinearReadout:
        """The nuisance-free read-out of x_q^T Gamma X^T y: u = e_(d+1), M = [Gamma^T; 0]."""
        gamma = np.asarray(gamma, dtype=np.float64)
        d = gamma.shape[0]
        u = np.zeros(d + 1)
        u[d] = 1.0
        return cls(u=u, M=np.vstack([gamma.T, np.zeros((1, d))]))

    @property
    def d(self) -> int:
        return int(self.M.shape[1])

    @property
    def gamma_parts(self) -> dict[str, np.ndarray]:
        """The two linear parts: "uy_Mx" = u_y M_x^T and "my_ux" = m_y u_x^T, each (d, d)."""
        d = self.d
        return {"uy_Mx": self.u[d] * self.M[:d].T, "my_ux": np.outer(self.M[d], self.u[:d])}

    @property
    def gamma(self) -> np.ndarray:
        """Gamma = u_y M_x^T + m_y u_x^T: (d, d)."""
        parts = self.gamma_parts
        gamma: np.ndarray = parts["uy_Mx"] + parts["my_ux"]
        return gamma

    @property
    def eta_hat(self) -> float:
        """tr(Gamma) / d, the learned step size."""
        return float(np.trace(self.gamma) / self.d)

    @property
    def isotropy_err(self) -> float:
        """||Gamma - eta_hat I||_F / ||Gamma||_F (nan when Gamma = 0)."""
        gamma, eta = self.gamma, self.eta_hat
        norm = float(np.linalg.norm(gamma))
        if norm == 0:
            return float("nan")
        return float(np.linalg.norm(gamma - eta * np.eye(self.d))) / norm
