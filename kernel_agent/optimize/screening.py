"""The agent's screen: many proposals predicted, the most promising measured.

Once a run has timed a few candidates (or starts from earlier runs' measurements of the task), the
performance predictor (`predictor.py`), refitted on every attempt so far and on the earlier runs'
measurements of the task, ranks a pool of proposals by expected improvement over the best time (a
likely failure counts for little). Each screened proposal carries its forecast, which the journal
keeps and the report checks against the measurement.
"""

from __future__ import annotations

import math
from dataclasses import replace

from sandbox import Status

from ..seams import Candidate, Forecast, Proposal, SearchState
from .predictor import Features, Predictor, candidate_features

MIN_TIMED = 5  # timed attempts before predictions are trusted to pick


class Screen:
    def __init__(self, min_timed: int = MIN_TIMED) -> None:
        self.model = Predictor(min_timed)
        self._rows_fitted = -1
        self._features: dict[Candidate, Features] = {}

    def features(self, state: SearchState, candidate: Candidate) -> Features:
        if candidate not in self._features:
            self._features[candidate] = candidate_features(state.space, candidate)
        return self._features[candidate]

    def ready(self, state: SearchState) -> bool:
        """Refit on the earlier runs' rows and this run's attempts if any came since the last fit; True
        when the model has seen enough timed rows to rank with."""
        rows = [(c, ms) for c, ms in state.earlier if c.kernel in state.space.kernels]
        rows += [(a.candidate, a.ms) for a in state.attempts if a.outcome.status is not Status.not_run
                 and a.candidate.kernel in state.space.kernels]
        if len(rows) != self._rows_fitted:
            self.model.fit([(self.features(state, c), ms) for c, ms in rows])
            self._rows_fitted = len(rows)
        return self.model.trained and state.best() is not None

    def rank(self, state: SearchState, pool: list[Proposal]) -> list[Proposal]:
        """The pool, most promising first, each with its forecast (call `ready` first)."""
        best = state.best()
        assert best is not None and best.ms is not None
        best_log = math.log(max(best.ms, 1e-6))
        predictions = self.model.predict([self.features(state, p.candidate) for p in pool])
        scored = sorted(zip(pool, predictions), key=lambda pair: -pair[1].expected_improvement(best_log))
        return [replace(p, predicted=Forecast(math.exp(pr.log_ms), pr.p_fail)) for p, pr in scored]

