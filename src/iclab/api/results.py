"""The typed results of the Python API: frozen dataclasses with the standard numbers of a
command's output as attributes, the whole output as ``result`` and the folder it wrote."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclab.config.train import TrainConfig


def _number(result: dict[str, Any], key: str) -> float | None:
    value = result.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


@dataclass(frozen=True)
class TrainResult:
    """A finished run: result.json's standard numbers (None where the run's model or family
    has none: ``eta_hat`` needs a read-out), the whole of it as ``result``, the folder and the
    config. ``load_model()`` reads the trained weights back; ``plot()`` draws the training."""

    run_dir: Path
    config: TrainConfig
    result: dict[str, Any]
    verdict: str | None
    eta_hat: float | None
    eta_star: float | None
    test_loss: float
    test_loss_stderr: float
    loss_star: float | None
    gamma: list[list[float]] | None
    gamma_star: list[list[float]] | None
    registries: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, run_dir: Path, config: TrainConfig, result: dict[str, Any],
           registries: Any = None) -> TrainResult:
        return cls(Path(run_dir), config, result, result.get("verdict"),
                   _number(result, "eta_hat"), _number(result, "eta_star"),
                   float(result["test_loss"]), float(result["test_loss_stderr"]),
                   _number(result, "loss_star"), result.get("gamma"),
                   result.get("gamma_star"), registries)

    def metrics(self) -> list[dict[str, Any]]:
        """metrics.jsonl's lines: step, loss, lr and the read-out's numbers as logged; an
        unreadable line is one ``iclab.Error`` naming it."""
        from iclab.training.run_folder import RunFolder
        from iclab.utils.errors import ConfigError

        path = RunFolder(self.run_dir).metrics
        lines = []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                entry = None
            if not isinstance(entry, dict):
                raise ConfigError(f"{path}: line {number} is not a JSON object")
            lines.append(entry)
        return lines

    def load_model(self) -> Any:
        """The trained model (an ``iclab.models.Model``, float64 on the CPU), checked to be
        the weights this result judged."""
        from iclab.runs.folder import load_trained_model

        models = None if self.registries is None else self.registries.models
        return load_trained_model(self.run_dir, self.config, models, self.result)

    def plot(self, ax: Any = None) -> Any:
        """The training loss against the step with L* (when the run has one) as a line, on
        ``ax`` (a new figure's axes by default); returns the matplotlib Figure."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        lines = self.metrics()
        ax.plot([m["step"] for m in lines], [m["loss"] for m in lines], label="training loss")
        if self.loss_star is not None:
            ax.axhline(self.loss_star, color="k", linestyle="--", label="L* (theory)")
        ax.set_xlabel("step")
        ax.set_ylabel("loss")
        ax.set_yscale("log")
        ax.legend()
        return ax.figure


@dataclass(frozen=True)
class TheoryResult:
    """``iclab theory``'s JSON: Gamma*, eta* (None where Gamma* is not a multiple of I), the
    optimal loss, the Bayes risk (None where not computed), the method, and all of it."""

    result: dict[str, Any]
    gamma: list[list[float]] | None
    eta: float | None
    loss: float | None
    bayes_loss: float | None
    method: str | None

    @classmethod
    def of(cls, result: dict[str, Any]) -> TheoryResult:
        return cls(result, result.get("gamma"), _number(result, "eta"),
                   _number(result, "loss"), _number(result, "bayes_loss"),
                   result.get("method"))


@dataclass(frozen=True)
class CertifyResult:
    """``iclab certify``'s JSON: the verdict sentence, the span bound, the model's test loss,
    the combined and paired z, and all of it."""

    result: dict[str, Any]
    verdict: str
    bound: float | None
    test_loss: float | None
    z: float | None
    z_paired: float | None

    @classmethod
    def of(cls, result: dict[str, Any]) -> CertifyResult:
        return cls(result, str(result["verdict"]), _number(result, "bound"),
                   _number(result, "test_loss"), _number(result, "z"),
                   _number(result, "z_paired"))

    @property
    def certified(self) -> bool:
        return self.verdict.startswith("certified")


@dataclass(frozen=True)
class CommandResult:
    """A command that writes a folder of results (``iclab shift``, ``iclab dynamics``): its
    JSON output as ``result`` and the folder (None where the command chose one not known
    here); ``figure`` is its .png, if written."""

    result: dict[str, Any]
    out_dir: Path | None
    figure: Path | None = None


@dataclass(frozen=True)
class SweepResult:
    """A sweep's folder: results.csv's rows (strings, as written), claims.json's claims
    (empty without claims) and whether every claim holds."""

    out_dir: Path
    rows: list[dict[str, str]]
    claims: list[dict[str, Any]]
    all_hold: bool

    @classmethod
    def of(cls, out_dir: Path) -> SweepResult:
        with (out_dir / "results.csv").open(newline="") as handle:
            rows = list(csv.DictReader(handle))
        claims_file = out_dir / "claims.json"
        claims: list[dict[str, Any]] = []
        if claims_file.is_file():
            loaded = json.loads(claims_file.read_text())
            claims = loaded.get("claims", []) if isinstance(loaded, dict) else loaded
        return cls(out_dir, rows, claims, all(bool(c.get("holds")) for c in claims))
