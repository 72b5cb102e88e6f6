"""Online TTFT / TPOT regressors for `predicted_latency`, after llm-d's latency predictor sidecar.

What upstream does (llm-d/llm-d-latency-predictor at 04e44cd, 2026-08-10, training/
training_server.py, class `LatencyPredictor`; the EPP side at llm-d-inference-scheduler 520af47,
2026-05-17), and what this module keeps of it:

- **Samples and labels.** The EPP's predicted-latency producer
  (llm-d-inference-scheduler pkg/epp/framework/plugins/requestcontrol/dataproducer/
  predictedlatency/training.go, `buildTrainingEntry` / `recordTTFTTrainingData`) sends one
  training entry per request with the endpoint metrics *seen at dispatch* (KV-cache usage,
  waiting, running), the input length, the prefix-cache score and the prefill tokens in flight
  at dispatch, labelled with the observed TTFT (first token) and TPOT (end of stream). Samples
  with a zero label are not trained on (`add_training_sample`: `actual_tpot_ms > 0`). Here the
  policy remembers the features a request was routed with and labels them from the engine's
  FirstToken / RequestCompleted events; TPOT only when the request produced more than one token.
  Checked at llm-d-inference-scheduler 520af47: both entries carry the *dispatch-time* metrics
  even though `refreshLastSeenMetrics` runs at every chunk, because the scheduling result's
  endpoints hold a clone taken when scheduling (pkg/epp/framework/interface/scheduling/types.go
  `NewEndpoint`: `metrics.Clone()`); the TTFT label is first chunk minus PreRequest, the TPOT
  label (end of stream - PreRequest - TTFT) / (tokens - 1), the whole decode's mean
  (requestcontrol_hooks.go `ResponseBody`), so a TPOT label arrives one whole request after
  its features were read. Tokens in flight: llm-d's EPP adds a prompt to its pod's count at
  PreRequest and removes it at end of stream (a prefill pod's at first token); the training
  row reads the count after adding the request, a prediction before (prediction.go). kvtui's
  default reads the node's prompt tokens queued or not yet prefilled instead (see
  `PredictedLatency.features`; `tokens_in_flight: epp` gives llm-d's count).
- **Stratified sliding window.** Each sample goes to a bucket keyed by (queue bucket, KV-cache
  bucket, prefix bucket); every bucket is a `deque(maxlen=MAX_TRAINING_DATA_SIZE_PER_BUCKET)`
  (default 500), so it keeps its newest samples and old regimes are not washed out by the
  current one (the blog's argument). Queue buckets are upstream's 0 / 1-2 / 3-5 / 6-10 / 11+
  waiting (`_get_queue_bucket`), prefix buckets quarters (`_get_prefix_bucket`); the EPP sends
  every TPOT entry with prefix score 0 (requestcontrol_hooks.go `ResponseBody`:
  `buildTrainingEntry(..., 0, 0)`), so the TPOT window is stratified by queue and KV only. KV buckets:
  upstream's 5 % steps (llm-d-latency-predictor 04e44cd training/training_server.py,
  `LatencyPredictor.__init__`: `cache_buckets = int(1.0 / 0.05)`, 20 buckets); the blog said
  tens of percent. `kv_buckets` is the knob (default 20, upstream's).
- **Retraining.** Upstream retrains in a background loop every `RETRAINING_INTERVAL_SEC`
  (code default 1800 s; the shipped ConfigMap deploy/base/training/configmap.yaml sets 1 s),
  skipping while the windows hold fewer than `MIN_SAMPLES_FOR_RETRAIN` samples in total (code
  1000, ConfigMap 100, lowered to `MIN_SAMPLES_FOR_RETRAIN_FRESH` = 10 when it starts without a
  saved model, which is always the case here). Defaults here: every 1 sim second, from 10 samples; optionally
  also after every `retrain_samples` new samples. Time is sim time, never the wall clock.
- **Gated ensemble.** With `ENSEMBLE_MODE` (default on) upstream trains separate "noqueue"
  (waiting == 0) and "queued" sub-models once each regime has `MIN_SAMPLES_FOR_ENSEMBLE_SPLIT`
  (200) samples, and routes a prediction to the sub-model of its regime. Kept (`ensemble_split`).
- **Features.** TTFT: is_queued, KV usage, input length, waiting, running, prefill and decode
  tokens in flight, prefix score, the interaction `effective_input_tokens = (1 - prefix) x input`
  (`_prepare_features_with_interaction`: "prefix caching benefit scales with input size"), the
  prefix bucket (quarters) and the pod type. TPOT: is_queued, KV usage, input length, waiting,
  running, the two in-flight counts, tokens generated and the pod type. The XGBoost model takes
  exactly these columns in upstream's order (`upstream_design`); the EPP always sends 0 decode
  tokens in flight, tokens generated is 0 at dispatch and kvtui's pods are monolithic, so those
  columns are constant. Left out: the encoder sizes (multimodal; no such inputs here).
- **Beyond upstream: the iteration in progress** (`iteration_feature`, off by default). A
  request that reaches a busy server waits for the iteration in progress to end before its
  prefill is scheduled: a share of one iteration (milliseconds, a large part of a short TTFT)
  that no dispatch-time metric shows, so no upstream feature can learn it. kvtui knows it
  exactly (`Node.iteration_left`); with the option on, every model gets it as one more column
  (TTFT and TPOT, linear and XGBoost). No real EPP can see this: it measures how much of the
  TTFT error is that wait, it is not a model of llm-d.

Regressors:

- `linear` (default, numpy only): ridge least squares on the features above plus two
  interactions, `effective_input x running` (a prefill shares its iterations with the running
  decodes) and `waiting x running` (a queued request waits for decodes to finish). Weighted by
  1 / y^2, i.e. it minimises the squared *relative* error: the router compares latencies that
  span three orders of magnitude and the figure reported is MAPE, so a 10 ms error on a 20 ms
  TTFT must cost as much as a 1 s error on a 2 s one. Upstream's numpy-free analogue is its
  `bayesian_ridge` model type (sklearn BayesianRidge on standardised features). A linear model
  is the right default for this simulator: the roofline latency model is itself piecewise
  linear in tokens and batch size, and the queued / not-queued split supplies the kink.
- `xgboost` (`pip install 'kvtui[xgboost]'`): upstream's default model type and its
  hyper-parameters (200 trees, depth 6, learning rate 0.05, subsample / colsample 0.8,
  min_child_weight 5, gamma 0.2, reg_alpha 0.01, reg_lambda 0.1, hist, random_state 42), with
  `nthread=1` so runs are bit-for-bit reproducible, through the native `xgboost.train` API (no
  scikit-learn needed). Objective (`objective`): `relative` (default), `reg:squarederror`
  on the log of the latency (squared relative error, as the linear model's 1 / y^2 weights,
  but without weights: see `objective_target`); or `quantile`, upstream's default
  (`LATENCY_OBJECTIVE_TYPE=quantile`: `reg:quantileerror` at `LATENCY_QUANTILE_ALPHA`, 0.9,
  unweighted; training_server.py `_train_model_with_scaling`), a deliberate pessimism for SLO
  admission that over-predicts by design (`quantile_alpha` sets the quantile). kvtui reports
  the error as MAPE against what happened, which the relative mean targets; upstream's other
  objective, `mean`, is plain `reg:squarederror`. The default objective is the one deliberate
  departure from upstream's defaults.

Upstream also holds out 10 % of samples as a test set (hash split) to score each retrain;
here every prediction is scored online against what happened (see `predicted_latency`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from kvtui.sim.router.blas import one_blas_thread

# The raw features, in this order, for every sample and every candidate.
FEATURES = ("kv", "input", "waiting", "running", "prefill_tif", "prefix", "iteration_left")
Row = tuple[float, float, float, float, float, float, float]
ITERATION_LEFT = FEATURES.index("iteration_left")

MISSING_XGBOOST = (
    "router.predicted_latency.regressor is 'xgboost' but the xgboost package is not installed; "
    "install it with `pip install 'kvtui[xgboost]'` or use regressor: linear"
)


def queue_bucket(waiting: float) -> int:
    """llm-d-latency-predictor `_get_queue_bucket`: 0, 1-2, 3-5, 6-10, 11+ waiting requests."""
    if waiting <= 0:
        return 0
    if waiting <= 2:
        return 1
    if waiting <= 5:
        return 2
    if waiting <= 10:
        return 3
    return 4


def fraction_bucket(x: float, n: int) -> int:
    """`_get_cache_bucket` / `_get_prefix_bucket`: clamp to [0, 1], n equal steps."""
    x = 0.0 if x < 0.0 else 1.0 if x > 1.0 else x
    return min(int(x * n), n - 1)


class StratifiedWindow:
    """Samples in (queue, KV, prefix) buckets, each keeping its newest `per_bucket`.

    `version` counts the samples ever added, so a trainer can tell that the window has not
    changed since its last fit. Each bucket's arrays are kept until the bucket next changes:
    a retrain every simulated second rebuilt every bucket from its tuples (profiled on
    workload-c-small at 15 req/s: 60 % of the retraining time), where most buckets had not moved.
    """

    def __init__(self, per_bucket: int = 500, kv_buckets: int = 20, prefix_buckets: int = 4) -> None:
        self.per_bucket = per_bucket
        self.kv_buckets = kv_buckets
        self.prefix_buckets = prefix_buckets
        self.buckets: dict[tuple[int, int, int], deque[tuple[Row, float]]] = {}
        self.version = 0
        self._arrays: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}

    def key(self, x: Row) -> tuple[int, int, int]:
        return (queue_bucket(x[2]), fraction_bucket(x[0], self.kv_buckets), fraction_bucket(x[5], self.prefix_buckets))

    def add(self, x: Row, y: float) -> None:
        k = self.key(x)
        b = self.buckets.get(k)
        if b is None:
            b = self.buckets[k] = deque(maxlen=self.per_bucket)
        b.append((x, y))
        self._arrays.pop(k, None)
        self.version += 1

    def __len__(self) -> int:
        return sum(len(b) for b in self.buckets.values())

    def _bucket_arrays(self, k: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
        got = self._arrays.get(k)
        if got is None:
            b = self.buckets[k]
            X = np.asarray([x for x, _ in b], dtype=float).reshape(-1, len(FEATURES))
            got = self._arrays[k] = (X, np.asarray([y for _, y in b], dtype=float))
        return got

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Every sample, buckets in key order (deterministic), as (X raw, y)."""
        parts = [self._bucket_arrays(k) for k in sorted(self.buckets)]
        if not parts:
            return np.zeros((0, len(FEATURES))), np.zeros(0)
        return np.concatenate([X for X, _ in parts]), np.concatenate([y for _, y in parts])


def upstream_design(X: np.ndarray, target: str, iteration: bool = False) -> np.ndarray:
    """The XGBoost model's columns, in upstream's order (training_server.py
    `_prepare_features_with_interaction` and the `ttft_order` / `tpot_order` lists it enforces).

    TTFT: is_queued, kv, input, waiting, running, prefill tokens in flight, decode tokens in
    flight, prefix, effective input, prefix bucket (quarters), pod type. TPOT: is_queued, kv,
    input, waiting, running, the two in-flight counts, tokens generated, pod type. The EPP sends
    decode tokens in flight as 0 (llm-d-inference-scheduler@520af47, requestcontrol_hooks.go:
    `decodeTokensAtDispatch = 0`), tokens generated is 0 at dispatch, and every kvtui node is
    monolithic (pod type ""): constant columns, kept because column sampling draws from them too.
    `iteration` appends the time left in the iteration in progress (kvtui's option, see above).
    """
    kv, inp, wait, run, tif, pre = (X[:, i] for i in range(6))
    queued = (wait > 0).astype(float)
    zero = np.zeros(len(X))
    if target == "ttft":
        bucket = np.minimum(np.floor(np.clip(pre, 0.0, 1.0) * 4), 3)
        cols = [queued, kv, inp, wait, run, tif, zero, pre, (1.0 - pre) * inp, bucket, zero]
    else:
        cols = [queued, kv, inp, wait, run, tif, zero, zero, zero]
    if iteration:
        cols.append(X[:, ITERATION_LEFT])
    return np.column_stack(cols) if len(X) else np.zeros((0, len(cols)))


def design(X: np.ndarray, target: str, iteration: bool = False) -> np.ndarray:
    """The linear model's engineered columns (no intercept): upstream's numeric features plus
    kvtui's two interactions, and with `iteration` the time left in the running iteration."""
    kv, inp, wait, run, tif, pre = (X[:, i] for i in range(6))
    queued = (wait > 0).astype(float)
    if target == "ttft":
        eff = (1.0 - pre) * inp
        cols = [queued, kv, inp, wait, run, tif, pre, eff, eff * run, wait * run]
    else:
        cols = [queued, kv, inp, wait, run, tif, wait * run]
    if iteration:
        cols.append(X[:, ITERATION_LEFT])
    return np.column_stack(cols) if len(X) else np.zeros((0, len(cols)))


class LinearRegressor:
    """Ridge least squares on standardised engineered columns, weighted by 1 / y^2."""

    def __init__(self, target: str, iteration: bool = False, ridge: float = 1e-3) -> None:
        self.target = target
        self.iteration = iteration
        self.ridge = ridge
        self.mu: np.ndarray | None = None
        self.sd: np.ndarray | None = None
        self.beta: np.ndarray | None = None

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        D = design(X, self.target, self.iteration)
        self.mu = D.mean(axis=0)
        sd = D.std(axis=0)
        self.sd = np.where(sd > 0, sd, 1.0)
        Z = np.column_stack([np.ones(len(D)), (D - self.mu) / self.sd])
        w = 1.0 / np.maximum(y, 1e-9)  # sqrt of the 1/y^2 weights
        A = Z * w[:, None]
        b = y * w
        # Ridge on every column but the intercept, as extra rows of the least-squares system.
        # Its strength is relative to the weighted data, so it does not depend on the units.
        reg = np.sqrt(self.ridge * float(np.sum(w * w))) * np.eye(Z.shape[1])[1:]
        A = np.vstack([A, reg])
        b = np.concatenate([b, np.zeros(reg.shape[0])])
        with one_blas_thread():  # see blas.py: a second thread costs more than it gives here
            self.beta = np.linalg.lstsq(A, b, rcond=None)[0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        assert self.beta is not None and self.mu is not None and self.sd is not None
        D = design(X, self.target, self.iteration)
        Z = np.column_stack([np.ones(len(D)), (D - self.mu) / self.sd])
        return Z @ self.beta


# llm-d-latency-predictor v0.9.0 (commit 04e44cd) training/training_server.py
# `_train_model_with_scaling`, XGBoost branch (upstream also sets verbosity 1, enable_categorical).
XGB_PARAMS = {
    "max_depth": 6,
    "eta": 0.05,  # learning_rate
    "subsample": 0.8,
    "colsample_bytree": 0.8,
    "min_child_weight": 5,
    "gamma": 0.2,
    "alpha": 0.01,  # reg_alpha
    "lambda": 0.1,  # reg_lambda
    "tree_method": "hist",
    "seed": 42,  # random_state
    "nthread": 1,  # upstream n_jobs=-1; one thread keeps reruns bit-for-bit identical
    "verbosity": 0,
}
XGB_ROUNDS = 200  # n_estimators


def import_xgboost():
    try:
        import xgboost  # noqa: PLC0415  (optional dependency, imported only when selected)
    except ImportError as e:  # pragma: no cover - exercised when the extra is absent
        raise ImportError(MISSING_XGBOOST) from e
    return xgboost


def objective_params(objective: str, alpha: float) -> dict:
    """The objective's XGBoost parameters (see the module docstring)."""
    if objective == "quantile":
        return {"objective": "reg:quantileerror", "quantile_alpha": alpha}
    return {"objective": "reg:squarederror"}


def objective_target(objective: str, y: np.ndarray) -> np.ndarray:
    """`relative`: the log of the latency, so squared error is relative error (the scale MAPE
    reports) while every sample keeps hessian weight 1; upstream's quantile objective: y as is.

    Not 1 / y^2 sample weights: XGBoost refuses a leaf whose samples' hessians sum under
    `min_child_weight` (5, upstream's), and normalised 1 / y^2 weights give a 10 s TTFT among
    60 ms ones a weight of ~4e-5, so no number of such samples could ever form a leaf and the
    model predicted the uncongested regime for a saturated node (workload C: TTFT 5-18 s
    predicted at 0.1-0.2 s)."""
    return y if objective == "quantile" else np.log(np.maximum(y, 1e-9))


def objective_inverse(objective: str, z: np.ndarray) -> np.ndarray:
    """Back from the trained target to milliseconds."""
    return z if objective == "quantile" else np.exp(z)


class XGBRegressor:
    """Upstream's XGBoost model on upstream's columns (single-threaded, seeded)."""

    def __init__(self, target: str, cfg: "PredictorConfig") -> None:
        self.target = target
        self.cfg = cfg
        self.xgb = import_xgboost()
        self.params = XGB_PARAMS | objective_params(cfg.objective, cfg.quantile_alpha)
        self.model = None

    def design(self, X: np.ndarray) -> np.ndarray:
        return upstream_design(X, self.target, self.cfg.iteration_feature)

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        # The native API (DMatrix + train), so the extra needs no scikit-learn.
        label = objective_target(self.cfg.objective, y)
        dtrain = self.xgb.DMatrix(self.design(X), label=label, nthread=1)
        self.model = self.xgb.train(self.params, dtrain, num_boost_round=XGB_ROUNDS)

    def predict(self, X: np.ndarray) -> np.ndarray:
        z = np.asarray(self.model.predict(self.xgb.DMatrix(self.design(X), nthread=1)), dtype=np.float64)
        return objective_inverse(self.cfg.objective, z)


def make_regressor(cfg: "PredictorConfig", target: str):
    if cfg.regressor == "linear":
        return LinearRegressor(target, cfg.iteration_feature)
    if cfg.regressor == "xgboost":
        return XGBRegressor(target, cfg)
    raise ValueError(f"unknown regressor {cfg.regressor!r} (linear, xgboost)")


class Gated:
    """Upstream's gated ensemble: one model, or noqueue / queued sub-models once both have data."""

    def __init__(self, cfg: "PredictorConfig", target: str) -> None:
        self.cfg, self.target, self.split = cfg, target, cfg.ensemble_split
        self.models: dict[str, object] = {}
        self.floor = 0.0

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        queued = X[:, 2] > 0
        n_q = int(queued.sum())
        models: dict[str, object] = {}
        if self.split > 0 and n_q >= self.split and len(X) - n_q >= self.split:
            for name, mask in (("noqueue", ~queued), ("queued", queued)):
                m = make_regressor(self.cfg, self.target)
                m.fit(X[mask], y[mask])
                models[name] = m
        else:
            m = make_regressor(self.cfg, self.target)
            m.fit(X, y)
            models["all"] = m
        self.models = models
        # A linear model can extrapolate below zero; no latency is below half the fastest seen.
        self.floor = 0.5 * float(y.min())

    def predict(self, X: np.ndarray) -> np.ndarray:
        if "all" in self.models:
            out = self.models["all"].predict(X)
        else:
            queued = X[:, 2] > 0
            out = np.empty(len(X))
            if (~queued).any():
                out[~queued] = self.models["noqueue"].predict(X[~queued])
            if queued.any():
                out[queued] = self.models["queued"].predict(X[queued])
        return np.maximum(out, self.floor)

    def describe(self) -> str:
        return "+".join(self.models)


@dataclass
class PredictorConfig:
    regressor: str = "linear"
    objective: str = "relative"  # xgboost only: relative | quantile
    quantile_alpha: float = 0.9
    iteration_feature: bool = False
    bucket_size: int = 500
    kv_buckets: int = 20
    min_samples: int = 10
    retrain_interval_s: float = 1.0
    retrain_samples: int = 0
    ensemble_split: int = 200


class LatencyPredictor:
    """Two stratified windows (TTFT, TPOT), retrained on a sim-time cadence.

    `add_ttft` / `add_tpot` take the features a request was routed with and the label in ms;
    `maybe_retrain(now)` fits when due; `predict(rows)` returns (TTFT ms, TPOT ms) arrays, or
    None while no TTFT model exists (the policy's cold path). A TPOT model missing while the
    TTFT one exists (every output one token long) predicts 0 ms TPOT.
    """

    def __init__(self, cfg: PredictorConfig | None = None) -> None:
        self.cfg = cfg or PredictorConfig()
        if self.cfg.regressor == "xgboost":
            import_xgboost()  # fail at construction, with the clear message
        elif self.cfg.regressor != "linear":
            raise ValueError(f"unknown regressor {self.cfg.regressor!r} (linear, xgboost)")
        self.ttft_window = StratifiedWindow(self.cfg.bucket_size, self.cfg.kv_buckets)
        self.tpot_window = StratifiedWindow(self.cfg.bucket_size, self.cfg.kv_buckets)
        self.ttft_model: Gated | None = None
        self.tpot_model: Gated | None = None
        self.samples = 0  # labels received (TTFT + TPOT)
        self.new = 0  # since the last retrain
        self.retrains = 0
        self.last_train = float("-inf")
        self.fitted: dict[str, int] = {}  # target -> its window's version at its last fit

    @property
    def trained(self) -> bool:
        return self.ttft_model is not None

    def add_ttft(self, x: Row, ttft_ms: float) -> None:
        if ttft_ms > 0:
            self.ttft_window.add(x, ttft_ms)
            self.samples += 1
            self.new += 1

    def add_tpot(self, x: Row, tpot_ms: float) -> None:
        if tpot_ms > 0:
            self.tpot_window.add(x, tpot_ms)
            self.samples += 1
            self.new += 1

    def due(self, now: float) -> bool:
        if self.new <= 0:
            return False
        if len(self.ttft_window) + len(self.tpot_window) < self.cfg.min_samples:
            return False
        if now - self.last_train >= self.cfg.retrain_interval_s:
            return True
        return self.cfg.retrain_samples > 0 and self.new >= self.cfg.retrain_samples

    def maybe_retrain(self, now: float) -> bool:
        if not self.due(now):
            return False
        self.retrain(now)
        return True

    def retrain(self, now: float) -> None:
        """Fit each model whose window holds at least `min_samples` (upstream's per-model check).

        A window that gained no sample since its model's last fit keeps that model: the fit is
        deterministic (least squares; XGBoost seeded, one thread), so refitting the same
        samples would give the same model at a cost."""
        for window, attr, target in ((self.ttft_window, "ttft_model", "ttft"), (self.tpot_window, "tpot_model", "tpot")):
            if len(window) >= self.cfg.min_samples and self.fitted.get(target) != window.version:
                self.fitted[target] = window.version
                X, y = window.arrays()
                model = Gated(self.cfg, target)
                model.fit(X, y)
                setattr(self, attr, model)
        self.last_train = now
        self.new = 0
        self.retrains += 1

    def predict_tpot(self, rows: Sequence[Row]) -> np.ndarray | None:
        """TPOT alone (ms), or None while no TPOT model exists: the in-stream re-predictions."""
        if self.tpot_model is None:
            return None
        return self.tpot_model.predict(np.asarray(rows, dtype=float).reshape(-1, len(FEATURES)))

    def predict(self, rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray] | None:
        if self.ttft_model is None:
            return None
        X = np.asarray(rows, dtype=float).reshape(-1, len(FEATURES))
        ttft = self.ttft_model.predict(X)
        tpot = self.tpot_model.predict(X) if self.tpot_model is not None else np.zeros(len(X))
        return ttft, tpot
