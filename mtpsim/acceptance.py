"""Acceptance profiles: conditional per-depth acceptance, its other forms, sampling.

alpha_k = P(draft k accepted | drafts 1..k-1 accepted); a_k = prod_{j<=k} alpha_j = P(at least k
accepted); E[A] = 1 + sum_k a_k. A measured histogram `accept_counts[j]` (iterations in which
exactly j drafts were accepted) converts to the same form, so measurements feed in unchanged.

Tree drafts (topk > 1) take per-depth, per-rank acceptance; mtpsim/tree.py turns it into the
distribution of accepted drafts of the tree SGLang verifies. Any distribution over 0..S is a
leading run of successes with alpha_k = P(>= k) / P(>= k-1), so a tree's profile is held in
that same conditional form and `sample` draws exactly the tree's distribution.

An accept-length curve {S: E[A] measured with S steps} gives the per-depth form when the first k
drafts of an S-step chain are the drafts a k-step chain proposes (true of every chain design
here: a draft step never looks at how many steps follow it) and verification accepts a prefix:
then E[A](S) = 1 + sum_{k<=S} a_k, so a_k = E[A](k) - E[A](k-1) (E[A](0) = 1) and
alpha_k = a_k / a_{k-1}. A curve can only come from a chain when every gain lies in (0, 1] and
no gain exceeds the one before it (a_k <= a_{k-1}); `curve_problem` says which step breaks that.
Named curves (`acceptance.profile`) are published measurements, mtpsim/data/acceptance/*.yaml.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from mtpsim.acceptance_histogram import read_histogram
from mtpsim.errors import ScenarioError

# an iteration's accepted drafts per request (AcceptanceProfile.sample) for up to LEADING_BITS
# depths: depth k's success is bit k of a byte, and LEADING_RUN[byte] the run of ones from bit 0,
# as np.int_ (what summing the leading run's booleans gives): one matmul and one lookup per
# iteration in place of an accumulate and a sum (~2 us less of ~14)
LEADING_BITS = 8
_BIT_VALUES = (1 << np.arange(LEADING_BITS)).astype(np.uint8)
LEADING_RUN = np.array([(~v & (v + 1)).bit_length() - 1 for v in range(1 << LEADING_BITS)], np.int_)


@dataclass(frozen=True)
class AcceptanceProfile:
    """Conditional acceptance per depth, the per-request spread (0 = identical requests) and,
    for a draft length that adapts per request, the distribution of drafts kept (kept_pmf[j] =
    P(exactly j kept); None: all are)."""

    alphas: tuple[float, ...]
    spread: float = 0.0
    kept_pmf: tuple[float, ...] | None = None
    kept_before_drafting: bool = False  # a depth controller's widths: a request at 0 drafts nothing
    shared: bool = False  # one draw per iteration for the whole batch (SGLang's forced rule, `forced`)

    # ------------------------------------------------------------------ forms
    @classmethod
    def from_cumulative(cls, cumulative, spread: float = 0.0) -> AcceptanceProfile:
        """a_k -> alpha_k = a_k / a_{k-1} (0 once a depth is never reached)."""
        a = np.asarray(cumulative, dtype=float)
        prev = np.concatenate([[1.0], a[:-1]])
        alphas = np.divide(a, prev, out=np.zeros_like(a), where=prev > 0)
        return cls(tuple(float(x) for x in alphas), spread)

    @classmethod
    def from_accept_length(cls, accept_length: float, steps: int, spread: float = 0.0,
                           kept: tuple[float, ...] | None = None) -> AcceptanceProfile:
        """The geometric profile (alpha constant over depth) whose E[A] over `steps` matches. With a
        kept-length distribution `kept` (kept[j] = P(exactly j drafts kept), j past steps keeping
        all), the accept length is the one measured with that rule on: E over the kept widths w
        of 1 + a_1 + ... + a_w, at most 1 + E[min(w, steps)] (`most_with_kept`)."""
        weights = _depth_weights(steps, kept)  # P(depth k is verified), k = 1..steps
        if not 1.0 <= accept_length <= 1.0 + weights.sum() + 1e-9:
            raise ValueError(f"accept length {accept_length} outside [1, {1.0 + weights.sum():.6g}]")
        lo, hi = 0.0, 1.0
        for _ in range(60):  # bisection: E[A] is increasing in alpha
            mid = (lo + hi) / 2
            reached = 1 + float(weights @ mid ** np.arange(1, steps + 1))
            lo, hi = (mid, hi) if reached < accept_length else (lo, mid)
        return cls((lo,) * steps, spread)

    @staticmethod
    def most_with_kept(steps: int, kept: tuple[float, ...] | None) -> float:
        """The largest accept length a kept-length rule allows: every kept draft accepted."""
        return 1.0 + float(_depth_weights(steps, kept).sum())

    @classmethod
    def from_histogram(cls, counts, spread: float = 0.0) -> AcceptanceProfile:
        """counts[j] = iterations with exactly j drafts accepted -> conditional alphas.

        Only iterations that could have accepted more count toward a depth; here every iteration
        proposes len(counts) - 1 drafts, so P(at least k) = sum_{j>=k} counts[j] / total."""
        c = np.asarray(counts, dtype=float)
        if c.ndim != 1 or len(c) < 2 or c.sum() <= 0 or (c < 0).any():
            raise ValueError("a histogram needs at least two non-negative counts with a positive total")
        at_least = c[::-1].cumsum()[::-1] / c.sum()
        return cls.from_cumulative(at_least[1:], spread)

    @classmethod
    def from_tree(cls, rank_probs, topk: int, draft_tokens: int, spread: float = 0.0) -> AcceptanceProfile:
        """rank_probs[k][j] = P(target's token at depth k+1 is the draft's (j+1)-th best | path
        accepted), one row per step -> the profile of the verify tree of `draft_tokens` tokens
        (mtpsim/tree.py, with its calibrated-draft assumption). With topk 1 it is the chain:
        alpha_k = rank_probs[k][0]."""
        if topk == 1:
            return cls(tuple(float(row[0]) for row in rank_probs), spread)
        from mtpsim.tree import accept_distribution  # on first use: a chain (topk 1) never reads it
        pmf = accept_distribution(rank_probs, topk, draft_tokens)
        return cls.from_cumulative(pmf[::-1].cumsum()[::-1][1:], spread)

    @classmethod
    def from_tree_accept_length(cls, accept_length: float, steps: int, topk: int, draft_tokens: int,
                                spread: float = 0.0) -> AcceptanceProfile:
        """The tree profile of the one-parameter rank family (tree.py `tree_rank_rows`) whose accept length
        over this tree matches: what a tree's published accept length alone allows."""
        from mtpsim.tree import tree_rank_rate, tree_rank_rows  # on first use: a chain never reads it
        rate = tree_rank_rate(accept_length, steps, topk, draft_tokens)
        return cls.from_tree(tree_rank_rows(rate, steps, topk), topk, draft_tokens, spread)

    @classmethod
    def from_accept_lengths(cls, curve: dict[int, float], spread: float = 0.0) -> AcceptanceProfile:
        """{S: E[A] with S steps}, S = 1..M -> alphas (module docstring; curve_problem must pass)."""
        lengths = [1.0] + [curve[s] for s in sorted(curve)]
        return cls.from_cumulative([b - a for a, b in zip(lengths, lengths[1:])], spread)

    @classmethod
    def forced(cls, engine: str, setting: float, steps: int, where: str = "") -> AcceptanceProfile:
        """The per-iteration rule an engine's forced-acceptance knob applies, as each engine's source
        at its catalog version reads the `setting` it is given:
        - vllm 0.22.0 `synthetic_acceptance_length` AL (vllm/config/speculative.py
          _acceptance_length_to_rates: unconditional rates [1] * floor(AL - 1) + [frac] + [0]...;
          vllm/v1/sample/rejection_sampler.py: per request, position k accepted while a uniform is
          below the conditional rate a_k / a_{k-1}, the first rejection ends the run);
        - sglang 0.5.12 SGLANG_SIMULATE_ACC_LEN AL with SGLANG_SIMULATE_ACC_METHOD match-expected
          (srt/speculative/spec_utils.py generate_simulated_accept_index: AL clamped to [1, S + 1],
          then ONE draw per iteration for the whole batch, floor(AL) or floor(AL) + 1 tokens with
          weights 1 - frac, frac: every request of the batch accepts the same count);
        - trtllm TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS F = AL - 1 accepted drafts, whole or
          fractional (NVIDIA/TensorRT-LLM commit 00b6d5a25c30b4382d24fbdf52956d601b3ffd24,
          tensorrt_llm/_torch/speculative/interface.py get_force_num_accepted_tokens_float and
          SpecWorkerBase._apply_force_accepted_tokens, the one-model path MTP and Eagle3 run by
          default; not pinned to 1.3.0): 0 is off; else each generation request, every iteration,
          gets base = min(floor(F) + 1, S + 1) tokens and, when F has a fraction and base < S + 1,
          one more with probability frac(F), drawn per request (a fixed-seed pool indexed by the
          iteration counter and the request's slot: the same on every TP rank, independent across
          requests). That is cumulative acceptance 1 up to floor(F), frac(F) at floor(F) + 1, 0
          past it, drawn per request (not shared). An F above S accepts every draft. The
          two-model path parses the variable as an int (get_force_num_accepted_tokens), where a
          fraction is a warning and forcing off: not reproduced here."""
        if engine == "trtllm":
            if setting <= 0:
                raise ScenarioError(where, "acceptance.forced.setting", "0: TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS "
                                    "= 0 turns forcing off (give accepted drafts > 0: AL - 1)")
            full, frac = int(setting), setting - int(setting)
            cumulative = ([1.0] * full + [frac] * (frac > 0) + [0.0] * steps)[:steps]
            return cls(cls.from_cumulative(cumulative).alphas)
        length = max(1.0, min(steps + 1.0, setting)) if engine == "sglang" else setting
        if not 1.0 <= length <= steps + 1:
            raise ScenarioError(where, "acceptance.forced.setting", f"{setting:g}: vLLM's synthetic_acceptance_length "
                                f"must lie in [1, steps + 1 = {steps + 1}]")
        full, frac = int(length - 1), (length - 1) - int(length - 1)
        cumulative = ([1.0] * full + [frac] + [0.0] * steps)[:steps]
        return cls(cls.from_cumulative(cumulative).alphas, shared=engine == "sglang")

    @classmethod
    def from_section(cls, acc, steps: int, where: str, topk: int = 1, draft_tokens: int | None = None) -> AcceptanceProfile:
        """From a scenario's `acceptance` section; a tree's shape (topk, draft_tokens) is needed
        for per_depth_topk. A design that drafts nothing (steps 0: `none`) accepts nothing, whatever
        the section holds (advice.py warns that it is ignored)."""
        if steps == 0:
            return cls(())
        profile = cls._from_form(acc, steps, where, topk, draft_tokens)
        if acc.kept_length is None:
            return profile
        pmf = np.asarray(acc.kept_length, dtype=float)
        return replace(profile, kept_pmf=tuple(float(p) for p in pmf / pmf.sum()),
                       kept_before_drafting=acc.kept_by == "controller")

    @classmethod
    def _from_form(cls, acc, steps: int, where: str, topk: int, draft_tokens: int | None) -> AcceptanceProfile:
        if acc.per_depth_topk is not None:
            rows = [row[:topk] for row in acc.per_depth_topk[:steps]]  # ranks past topk are never proposed
            return cls.from_tree(rows, topk, draft_tokens or steps + 1, acc.spread)
        if acc.per_depth is not None:
            return cls(tuple(acc.per_depth), acc.spread)
        if acc.cumulative is not None:
            return cls.from_cumulative(acc.cumulative, acc.spread)
        if acc.accept_length is not None and topk > 1:  # a tree: the rank family's rate that gives it
            return cls.from_tree_accept_length(acc.accept_length, steps, topk, draft_tokens or steps + 1, acc.spread)
        if acc.accept_length is not None:  # beside a kept-length rule: the accept length measured with it on
            return cls.from_accept_length(acc.accept_length, steps, acc.spread, acc.kept_length)
        if acc.histogram is not None:
            return cls.from_histogram(read_histogram(acc.histogram, where), acc.spread)
        if acc.accept_length_by_steps is not None:
            return cls.from_accept_lengths(acc.accept_length_by_steps, acc.spread)
        if acc.profile is not None:
            return cls.from_accept_lengths(named_curve(acc.profile, where), acc.spread)
        if acc.forced is not None:
            return cls.forced(acc.forced.engine, acc.forced.setting, steps, where)
        return cls((0.0,) * steps)

    # ------------------------------------------------------------------ closed forms
    def cumulative(self, steps: int) -> np.ndarray:
        """a_1..a_steps (depths past the profile count as never accepted)."""
        alphas = np.zeros(steps)
        n = min(steps, len(self.alphas))
        alphas[:n] = self.alphas[:n]
        return np.cumprod(alphas)

    def accept_pmf(self, steps: int) -> np.ndarray:
        """P(exactly a drafts accepted), a = 0..steps: a_a - a_{a+1} (a_0 = 1, a_{steps+1} = 0)."""
        at_least = np.concatenate([[1.0], self.cumulative(steps), [0.0]])
        return at_least[:-1] - at_least[1:]

    def expected_accept_length(self, steps: int) -> float:
        """E[A] = 1 + sum_k a_k: tokens per request per iteration, bonus included."""
        return 1.0 + float(self.cumulative(steps).sum())

    def kept_length_mean(self, steps: int) -> float:
        """E[drafts kept] out of `steps` (steps without a kept-length curve)."""
        if self.kept_pmf is None:
            return float(steps)
        return float(np.minimum(np.arange(len(self.kept_pmf)), steps) @ np.asarray(self.kept_pmf))

    def kept_quantiles(self, n: int, steps: int) -> np.ndarray | None:
        """Drafts kept by each of n requests, deterministically in kept_pmf's proportions (request
        i keeps the (i + 1/2)/n quantile), capped at steps: a typical iteration for a report to
        price. None without a kept-length curve."""
        if self.kept_pmf is None:
            return None
        cdf = np.cumsum(self.kept_pmf)
        return np.minimum(np.searchsorted(cdf, (np.arange(n) + 0.5) / n), min(steps, len(cdf) - 1))

    # ------------------------------------------------------------------ sampling
    def kept_drafts(self, rng: np.random.Generator, n: int, steps: int) -> np.ndarray | None:
        """Drafts each of n requests keeps for verification in an iteration that drafted `steps`:
        a draw from kept_pmf, capped at steps (an iteration a steps policy shortened keeps at most
        what it drafted). None without a kept-length curve: every request keeps all."""
        if self.kept_pmf is None:
            return None
        return np.minimum(rng.choice(len(self.kept_pmf), size=n, p=self.kept_pmf), steps)

    def request_levels(self, rng: np.random.Generator, n: int, steps: int) -> np.ndarray:
        """Per-request alphas (n x steps): each a Beta with the profile's mean and variance
        spread^2 * alpha(1 - alpha), drawn once per request; the profile itself when spread is 0."""
        alphas = np.zeros(steps)
        n_given = min(steps, len(self.alphas))
        alphas[:n_given] = self.alphas[:n_given]
        if self.spread < 1e-6:  # below this the Beta is indistinguishable from the mean
            return np.broadcast_to(alphas, (n, steps)).copy()
        kappa = 1.0 / self.spread ** 2 - 1.0
        inner = (alphas > 1e-9) & (alphas < 1 - 1e-9)  # 0 and 1 stay exact (Beta would underflow)
        out = np.broadcast_to(alphas, (n, steps)).copy()
        a, b = alphas[inner] * kappa, (1 - alphas[inner]) * kappa
        out[:, inner] = rng.beta(a, b, size=(n, int(inner.sum())))
        return out

    @staticmethod
    def sample(rng: np.random.Generator, levels: np.ndarray, remaining: np.ndarray | None = None,
               shared: bool = False) -> np.ndarray:
        """Accepted drafts per request for one iteration: the leading run of successes of
        Bernoulli(levels[i, k]) over depths, capped so accepted + 1 bonus <= remaining tokens.
        `shared`: one row of uniforms serves every request (all accept alike when levels agree)."""
        success = rng.random(levels.shape[1:] if shared else levels.shape) < levels
        if success.shape[1] <= LEADING_BITS:  # each row's successes as bits, their leading run looked up
            accepted = LEADING_RUN[success.view(np.uint8) @ _BIT_VALUES[: success.shape[1]]]
        else:
            accepted = np.logical_and.accumulate(success, axis=1).sum(axis=1)  # the leading run's length
        if remaining is not None:
            np.minimum(accepted, np.maximum(remaining - 1, 0), out=accepted)
        return accepted


def curve_problem(curve: dict[int, float]) -> str | None:
    """Why an accept-length curve cannot come from a chain (module docstring), or None."""
    steps = sorted(curve)
    if steps != list(range(1, len(steps) + 1)):
        return f"needs every steps value from 1 to its largest, {steps[-1]} (got {steps})"
    last, gain_before = 1.0, 1.0
    for s in steps:
        gain = curve[s] - last
        if gain <= 0:
            return (f"step {s}: {curve[s]:g} is not above {'1 (no drafts)' if s == 1 else f'step {s - 1} ({last:g})'}"
                    ": a curve must increase with steps")
        if gain > gain_before + 1e-9:
            what = "1 (one draft adds at most one token)" if s == 1 else f"step {s - 1}'s gain {gain_before:.3g}"
            return f"step {s}: the gain {gain:.3g} exceeds {what}, so no per-depth acceptance gives this curve"
        last, gain_before = curve[s], gain
    return None


def _depth_weights(steps: int, kept) -> np.ndarray:
    """P(draft k is verified), k = 1..steps: 1 without a kept-length rule, else P(kept >= k), a
    kept entry past steps keeping all `steps`."""
    if kept is None:
        return np.ones(steps)
    pmf = np.asarray(kept, dtype=float) / sum(kept)
    at_least = pmf[::-1].cumsum()[::-1]  # at_least[k] = P(kept >= k)
    return np.array([at_least[k] if k < len(pmf) else 0.0 for k in range(1, steps + 1)])


@cache
def named_curves() -> dict[str, dict]:
    """The published accept-length curves shipped in mtpsim/data/acceptance/, by name."""
    from mtpsim.files import load_yaml
    from mtpsim.packagedata import data_dir
    out = {}
    for path in sorted((data_dir() / "acceptance").glob("*.yaml")):
        out.update(load_yaml(path) or {})
    return out


def named_curve(name: str, where: str = "") -> dict[int, float]:
    curves = named_curves()
    if name not in curves:
        raise ScenarioError(where, "acceptance.profile", f"no acceptance profile {name!r} (known: {', '.join(curves)})")
    return dict(curves[name]["accept_length_by_steps"])
