"""Predict a candidate's run time, with an uncertainty, and its chance of failing, before running it.

Every measured candidate costs a compile and a GPU run; a prediction costs microseconds. A strategy
that ranks unseen candidates by expected improvement spends its measurements where they pay, instead
of guessing. The search sees tens to a few hundred attempts and refits after every batch, so the model
is small and closed-form: a Gaussian process over standardized knob features for log time (trained on
the timed attempts), and for failures a kernel-weighted failure rate over all attempts around a logistic
regression. numpy only, a fit in milliseconds: no optimizer, hyperparameters are picked from small grids
by likelihood. See `Predictor` for the model, and `spearman` to check it against measurements.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..seams import Candidate
from .space import Space

Features = dict[str, float]

_LENGTHS = (0.125, 0.25, 0.5, 1.0, 2.0)  # length-scales, times sqrt(feature count): a standardized row's spread
_NOISES = (1e-3, 1e-2, 1e-1)  # noise variance as a share of the signal variance
_JITTER = 1e-10  # first extra diagonal tried where rounding breaks a Cholesky factorization
_PRIOR_WEIGHT = 1.0  # how many neighbours' worth the logistic prior counts for in p_fail
_PENALTIES = (0.1, 1.0, 10.0, 1e4)  # logistic L2 penalties; the last leaves about the overall failure rate
_P_FLOOR = 1e-3  # no candidate is certain to run, or to fail
_MIN_MS = 1e-6  # a reported time of 0 ms still has a logarithm


# --- features ---------------------------------------------------------------------------------------


def candidate_features(space: Space, candidate: Candidate) -> Features:
    """What is known about a candidate before running it, as numbers a distance can compare.

    One key per knob of the candidate's kernel, named after the knob (a generic knob shared by several
    kernels then means the same thing in each): log2 of the value when all of the knob's values are
    positive numbers (block sizes, tiles and unrolls act by ratio, not difference), the value itself
    when they are numbers but not all positive, else the value's position in the knob's list scaled to
    [0, 1] (words like "float4" or "true": the declared order is the only order there is). With several
    kernels, a one-hot "kernel=<label>" key per kernel. Callers may merge in more keys (ptxas registers,
    shared memory, occupancy); a key a row lacks counts as 0.
    """
    ks = space.kernels[candidate.kernel]
    out: Features = {}
    for name, value in candidate.knobs:
        knob = ks.knobs.get(name)
        if knob is None:
            continue
        encoding, numeric, positive = _encoding(tuple(knob.values))
        if value in encoding:
            out[name] = encoding[value]
        elif numeric and (x := _number(value)) is not None and (x > 0 or not positive):
            out[name] = math.log2(x) if positive else x  # a value outside the list (an LLM's): still a number
    if len(space.kernels) > 1:
        out.update({f"kernel={label}": float(label == candidate.kernel) for label in space.kernels})
    return out


@functools.lru_cache(maxsize=4096)
def _encoding(values: tuple[str, ...]) -> tuple[dict[str, float], bool, bool]:
    """A knob's value -> feature map, and whether its values are numbers, all positive. Cached: a
    knob's list is read once however many candidates use it. (The map is shared: not to be changed.)"""
    numbers = [_number(v) for v in values]
    if all(x is not None for x in numbers):
        xs = [float(x) for x in numbers if x is not None]
        if all(x > 0 for x in xs):
            return {v: math.log2(x) for v, x in zip(values, xs)}, True, True
        return dict(zip(values, xs)), True, False
    last = max(len(values) - 1, 1)
    return {v: i / last for i, v in enumerate(values)}, False, False


def _number(text: str) -> float | None:
    """A knob value as a finite number ("128", "0.5", "0x40", "16u", "1.0f"), or None (a word or an
    expression)."""
    text = text.strip()
    for candidate in (text, text.rstrip("uUlLfF")):
        if not candidate:
            continue
        try:
            x = float(candidate)
        except ValueError:
            try:
                x = float(int(candidate, 0))
            except ValueError:
                continue
        return x if math.isfinite(x) else None
    return None


# --- predictions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    log_ms: float  # natural log of the predicted median time
    std: float  # the model's uncertainty about log_ms (of the mean, not of one noisy measurement)
    p_fail: float  # chance the candidate fails to compile, run or verify

    def expected_improvement(self, best_log_ms: float) -> float:
        """How far below `best_log_ms` this candidate's log time is expected to land (0 where it lands
        above), times the chance it runs at all: a likely failure is worth little however fast."""
        gain = best_log_ms - self.log_ms
        if self.std <= 0.0:
            return max(gain, 0.0) * (1.0 - self.p_fail)
        z = gain / self.std
        cdf = 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
        pdf = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        return max(gain * cdf + self.std * pdf, 0.0) * (1.0 - self.p_fail)


class Predictor:
    """Log time by Gaussian-process regression; failure chance by kernel-weighted neighbours around a
    logistic regression.

    Features are standardized over all rows. The GP's kernel is Matern 5/2 (on our synthetic spaces
    it ranks as well as an RBF and holds up better with few rows), with one length-scale and a noise
    share picked from small grids by log marginal likelihood, the signal variance profiled out in
    closed form, and the mean log time as the prior mean.

    p_fail is the share of failed rows among a candidate's neighbours (weighted by the same kernel),
    smoothed toward a penalized logistic regression on the features, counted as one more neighbour.
    The logistic part sees the usual failure shape, a resource limit such as BLOCK * TILE too big,
    which is a straight line in log2 features, from a few rows; the neighbours see failures of no
    such shape. Both the penalty and the neighbours' length-scale are picked by leave-one-out
    likelihood; a large penalty leaves the overall failure rate as the prior.
    """

    def __init__(self, min_timed: int = 5) -> None:
        self.min_timed = min_timed  # fewer timed rows than this: the model is not worth trusting
        self._keys: list[str] = []
        self._center = np.zeros(0)
        self._scale = np.ones(0)
        # the time model: GP posterior on the timed rows
        self._ok = np.zeros(0, dtype=bool)  # which rows were timed
        self._alpha = np.zeros(0)  # (R + noise I)^-1 (standardized log times)
        self._l_inv = np.zeros((0, 0))  # inverse Cholesky factor of R + noise I, for the variance
        self._length = 1.0
        self._amplitude = 1.0  # signal variance, in standardized units
        self._y_mean = 0.0
        self._y_scale = 1.0
        # the failure model
        self._x_all = np.zeros((0, 0))
        self._failed = np.zeros(0)
        self._fail_length = 1.0
        self._logit = np.zeros(1)  # logistic weights, intercept last

    @property
    def trained(self) -> bool:
        """Enough timed rows that predictions are worth more than a random pick."""
        return int(self._ok.sum()) >= self.min_timed

    def fit(self, rows: Sequence[tuple[Features, float | None]]) -> None:
        """Refit from scratch on (features, measured ms, or None for a failed attempt)."""
        self._keys = sorted({key for features, _ in rows for key in features})
        self._center, self._scale = np.zeros(len(self._keys)), np.ones(len(self._keys))
        x = self._matrix([features for features, _ in rows])
        if len(rows):
            spread = x.std(axis=0)
            self._center, self._scale = x.mean(axis=0), np.where(spread > 1e-12, spread, 1.0)
            x = (x - self._center) / self._scale  # a constant feature keeps its units
        ok = np.array([ms is not None for _, ms in rows], dtype=bool)
        unit = math.sqrt(max(x.shape[1], 1))  # standardized rows lie about sqrt(2 d) apart
        distances = _distances(x, x)
        correlations = {g * unit: _matern(distances, g * unit) for g in _LENGTHS}  # shared by both models
        log_ms = np.log([max(ms, _MIN_MS) for _, ms in rows if ms is not None])
        self._x_all, self._ok, self._failed = x, ok, (~ok).astype(float)
        self._fit_time(log_ms, {length: c[np.ix_(ok, ok)] for length, c in correlations.items()})
        self._fit_failure(correlations)

    def predict(self, features: Sequence[Features]) -> list[Prediction]:
        """One prediction per row. Without any timed row the time is the prior: log_ms 0, std 1."""
        if not features:
            return []
        q = (self._matrix(features) - self._center) / self._scale
        distances = _distances(q, self._x_all)  # to every row; the time model reads its timed columns
        if self._ok.any():
            cross = _matern(distances[:, self._ok], self._length)
            mean = self._y_mean + self._y_scale * (cross @ self._alpha)
            v = cross @ self._l_inv.T
            std = self._y_scale * np.sqrt(self._amplitude * np.clip(1.0 - np.einsum("ij,ij->i", v, v), 1e-12, None))
        else:
            mean, std = np.zeros(len(q)), np.ones(len(q))
        p_fail = np.clip(_sigmoid(q @ self._logit[:-1] + self._logit[-1]), _P_FLOOR, 1.0 - _P_FLOOR)
        if 0 < self._failed.sum() < len(self._failed):
            weights = _matern(distances, self._fail_length)
            p_fail = _smoothed(weights @ self._failed, weights.sum(axis=1), p_fail)
        return [Prediction(float(m), float(s), float(p)) for m, s, p in zip(mean, std, p_fail)]

    def _matrix(self, rows: Sequence[Features]) -> np.ndarray:
        """Rows as a matrix over the fitted keys: a missing key is 0, a key not seen in fitting is ignored."""
        out = np.array([[row.get(key, 0.0) for key in self._keys] for row in rows], dtype=float)
        return out.reshape(len(rows), len(self._keys))

    def _fit_time(self, y: np.ndarray, correlations: dict[float, np.ndarray]) -> None:
        n = len(y)
        if not n:
            return
        self._y_mean = float(y.mean())
        spread = float(y.std())
        self._y_scale = spread if spread > 1e-12 else 1.0  # constant times: the GP fits zeros
        target = (y - self._y_mean) / self._y_scale
        best: tuple[float, float, np.ndarray, np.ndarray] | None = None  # (log likelihood, length, L, L^-1 y)
        for length, corr in correlations.items():
            for noise in _NOISES:
                chol, whitened = _cholesky_solve(corr, noise, target)
                quad = float(whitened @ whitened)
                # the signal variance that maximizes the likelihood is quad / n; with it plugged in:
                loglik = -0.5 * n * math.log(max(quad / n, 1e-12)) - float(np.log(np.diag(chol)).sum())
                if best is None or loglik > best[0]:
                    best = (loglik, length, chol, whitened)
        assert best is not None
        _, self._length, chol, whitened = best
        self._l_inv = np.linalg.solve(chol, np.eye(n))
        self._alpha = self._l_inv.T @ whitened
        self._amplitude = max(float(whitened @ whitened) / n, 1e-12)

    def _fit_failure(self, correlations: dict[float, np.ndarray]) -> None:
        x, failed = self._x_all, self._failed
        rate = (float(failed.sum()) + 1.0) / (len(failed) + 2.0)  # Laplace: 1/2 with no rows
        self._logit = np.zeros(x.shape[1] + 1)
        self._logit[-1] = math.log(rate / (1.0 - rate))
        if not 0 < failed.sum() < len(failed):
            return  # all alike: neighbours say nothing the overall rate does not
        # leave-one-out neighbour sums per length: a row's own failure must not predict itself
        held_out_sums: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        for length, corr in correlations.items():
            weights = corr.copy()
            np.fill_diagonal(weights, 0.0)
            held_out_sums[length] = (weights @ failed, weights.sum(axis=1))
        best, logit = -math.inf, None
        for penalty in _PENALTIES:  # from weak to strong: each fit starts from the last
            logit, prior = _logistic(x, failed, penalty, logit)
            for length, (near_failures, near_weight) in held_out_sums.items():
                p = _smoothed(near_failures, near_weight, prior)
                loglik = float(failed @ np.log(p) + (1.0 - failed) @ np.log1p(-p))
                if loglik > best:
                    best, self._logit, self._fail_length = loglik, logit, length


def _cholesky_solve(corr: np.ndarray, noise: float, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L with L L^T = corr + noise I, and L^-1 target, from one factorization: the Cholesky factor of
    [[A, y], [y^T, c]] is [[L, 0], [(L^-1 y)^T, *]] (numpy has no triangular solve, and a general solve
    would cost as much again). c only has to keep the matrix positive definite: y^T A^-1 y <= |y|^2 / noise."""
    n = len(target)
    augmented = np.empty((n + 1, n + 1))
    augmented[:n, :n] = corr
    augmented[:n, n] = augmented[n, :n] = target
    augmented[n, n] = 2.0 * float(target @ target) / noise + 1.0
    diagonal = np.arange(n)
    jitter = 0.0
    while True:
        augmented[diagonal, diagonal] = corr[diagonal, diagonal] + noise + jitter
        try:
            factor = np.linalg.cholesky(augmented)
            return factor[:n, :n], factor[n, :n]
        except np.linalg.LinAlgError:  # only from rounding: noise alone keeps A positive definite
            if jitter > noise:
                raise
            jitter = max(10.0 * jitter, _JITTER)


def _smoothed(near_failures: np.ndarray, near_weight: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """Neighbours' failures (weighted count, total weight), with the prior counted as `_PRIOR_WEIGHT`
    more neighbours."""
    p = (near_failures + _PRIOR_WEIGHT * prior) / (near_weight + _PRIOR_WEIGHT)
    return np.clip(p, _P_FLOOR, 1.0 - _P_FLOOR)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _logistic(x: np.ndarray, y: np.ndarray, penalty: float, start: np.ndarray | None = None,
              steps: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """L2-penalized logistic regression by Newton steps: the weights (intercept last, not penalized),
    and each row's probability as if it had been left out (the usual one-step approximation,
    eta_i - h_i / (1 - h_i) * (y_i - p_i) / (p_i (1 - p_i))), so penalties compare without refitting."""
    n, d = x.shape
    design = np.hstack([x, np.ones((n, 1))])
    ridge = np.full(d + 1, penalty)
    ridge[d] = 1e-6
    if start is None:
        w = np.zeros(d + 1)
        w[d] = math.log((y.sum() + 0.5) / (n - y.sum() + 0.5))
    else:
        w = start.copy()
    for _ in range(steps):
        eta = design @ w
        p = _sigmoid(eta)
        curvature = np.clip(p * (1.0 - p), 1e-12, None)
        hessian = (design.T * curvature) @ design + np.diag(ridge)
        step = np.linalg.solve(hessian, design.T @ (p - y) + ridge * w)
        w = w - step
        if np.abs(step).max() < 1e-4:
            break
    # leverages from the last Hessian: one step from the optimum, close enough for picking a penalty
    leverage = np.clip(curvature * np.einsum("ij,ij->i", design @ np.linalg.inv(hessian), design), 0.0, 0.99)
    eta = design @ w
    p = _sigmoid(eta)
    return w, _sigmoid(eta - leverage / (1.0 - leverage) * (y - p) / np.clip(p * (1.0 - p), 1e-12, None))


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    squared = (a * a).sum(axis=1)[:, None] + (b * b).sum(axis=1)[None, :] - 2.0 * (a @ b.T)
    return np.sqrt(np.clip(squared, 0.0, None))


def _matern(distances: np.ndarray, length: float) -> np.ndarray:
    """Matern 5/2 correlation: 1 at distance 0, twice differentiable, not infinitely smooth."""
    r = distances * (math.sqrt(5.0) / length)
    out = np.exp(-r)
    r *= 1.0 + r / 3.0
    r += 1.0
    out *= r
    return out


# --- evaluation -------------------------------------------------------------------------------------


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Rank correlation, ties sharing their average rank: what a search needs from a predictor is the
    order of candidates, not their times. None with fewer than 3 points or a constant side."""
    if len(xs) != len(ys):
        raise ValueError(f"spearman: {len(xs)} xs but {len(ys)} ys")
    if len(xs) < 3:
        return None
    rx, ry = _ranks(np.asarray(xs, dtype=float)), _ranks(np.asarray(ys, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry) / denominator if denominator > 0 else None


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1, dtype=float)
    for value in np.unique(values):  # ties: each gets the mean of the ranks they span
        tied = values == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks
