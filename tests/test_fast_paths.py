"""The simulator's fast paths give the numbers of the plain code they stand in for, exactly.

Each fast path (a vectorized table fill, memoized or sliced pricing) is checked against a
straightforward reference over random inputs: the same floats, not just close ones.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mtpsim.costs.table_build import _fill_along


def _fill_along_reference(a: np.ndarray, axis: int) -> np.ndarray:
    """Line by line: each cell takes the nearest non-NaN cell's value (argmin: the lower on a tie)."""
    def fill(line):
        ok = np.flatnonzero(~np.isnan(line))
        if not len(ok):
            return line
        return line[ok[np.abs(np.arange(len(line))[:, None] - ok[None, :]).argmin(1)]]
    return np.apply_along_axis(fill, axis, a)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(float, hnp.array_shapes(min_dims=1, max_dims=4, max_side=6),
                  elements=st.one_of(st.just(np.nan), st.floats(-5, 5))), st.data())
def test_fill_along_matches_line_by_line(a, data):
    axis = data.draw(st.integers(0, a.ndim - 1))
    np.testing.assert_array_equal(_fill_along(a, axis), _fill_along_reference(a, axis))
    alike = np.where(np.isnan(a), np.nan, np.arange(a.size).reshape(a.shape))  # a's NaN cells, other values
    both = _fill_along(a, axis, alike)
    np.testing.assert_array_equal(both[0], _fill_along_reference(a, axis))
    np.testing.assert_array_equal(both[1], _fill_along_reference(alike, axis))



# ---------------------------------------------------------------------- pricing memos

def _scenario(design: str, **parallel):
    from mtpsim.scenario import validate
    return validate({"name": "memo", "model": "deepseek-v3", "hardware": "h200",
                     "parallel": {"tp": 8, **parallel},
                     "speculative": {"design": design, "steps": 3} if design != "none" else {"design": "none"},
                     "acceptance": {"per_depth": [0.8, 0.6, 0.4]} if design != "none" else {},
                     "workload": {"arrival": "closed", "concurrency": 8, "num_requests": 8, "input_len": 128,
                                  "output_len": 16}})


def _other(model, hardware, design, tp=1):
    """Parts with attention kinds of their own (a sliding-window MTP layer, a query-only assistant)."""
    from mtpsim.scenario import validate
    return validate({"name": "memo", "model": model, "hardware": hardware, "parallel": {"tp": tp},
                     "speculative": {"design": design, "steps": 3}, "acceptance": {"per_depth": [0.8, 0.6, 0.4]},
                     "workload": {"arrival": "closed", "concurrency": 8, "num_requests": 8, "input_len": 128,
                                  "output_len": 16}})


SCENARIOS = {"nextn": _scenario("nextn"), "none": _scenario("none"), "dp-attention": _scenario("nextn", ep=8, attention_dp=4),
             "multi_layer-swa": _other("mimo-v2-flash", "h200", "multi_layer", tp=8),
             "frozen_kv": _other("gemma-4-e2b", "a100-80g", "frozen_kv")}


def _fields(cost):
    return (cost.kind, cost.part, cost.tokens, cost.time_s, cost.compute_s, cost.memory_s, cost.comm_s,
            cost.launch_s, cost.flops, cost.weight_bytes, cost.kv_bytes, cost.comm_bytes, cost.sources)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(SCENARIOS)),
       st.lists(st.tuples(st.integers(1, 300), st.integers(0, 70_000), st.integers(0, 10)), min_size=1, max_size=6))
def test_warm_pricer_prices_as_a_fresh_one(name, batches):
    """A pricer whose plans and lookups were filled by other batches prices each batch exactly as
    a new pricer does (the memos are keyed on everything the price depends on)."""
    from mtpsim.costs import build_pricer
    from mtpsim.costs.ops import BatchLens
    from mtpsim.designs import DesignShape, iteration_passes, prefill_passes

    s = SCENARIOS[name]
    warm, design = build_pricer(s), DesignShape.of(s.speculative)
    shapes = iteration_passes(design) + prefill_passes(design)
    rng = np.random.default_rng(len(batches))
    for n, kv, spread in batches:
        kv_lens = kv + rng.integers(0, 1 + spread * 1000, n)
        for shape in shapes:
            q = np.full(n, shape.tokens_per_request) if shape.kind != "prefill" else rng.integers(1, 512, n)
            cold = build_pricer(s)
            assert _fields(warm.price(shape, q, kv_lens)) == _fields(cold.price(shape, q, kv_lens))
            if shape.kind != "prefill":
                lens = BatchLens.uniform(shape.tokens_per_request, kv_lens, int(kv_lens.sum()), int(kv_lens.max()))
                assert _fields(warm.price_lens(shape, lens)) == _fields(cold.price(shape, q, kv_lens))
        # as the engine prices an iteration: one BatchLens per query length, shared by its passes
        shared = {}
        for shape in iteration_passes(design):
            q = shape.tokens_per_request
            lens = shared.setdefault(q, BatchLens.uniform(q, kv_lens, int(kv_lens.sum()), int(kv_lens.max())))
            assert _fields(warm.price_lens(shape, lens)) == _fields(build_pricer(s).price(shape, np.full(n, q), kv_lens))


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(SCENARIOS)),
       st.lists(st.tuples(st.integers(1, 300), st.integers(0, 70_000), st.integers(0, 10)), min_size=1, max_size=6))
def test_a_timed_pass_takes_the_seconds_its_price_gives(name, batches):
    """PassTimer's seconds are price_lens' time_s to the float, for every pass it applies to, its
    own cores or those of the pass before it that it shares them with (sim/timing.py)."""
    from mtpsim.costs import build_pricer
    from mtpsim.costs.ops import BatchLens
    from mtpsim.costs.pass_timer import PassTimer
    from mtpsim.designs import DesignShape, iteration_passes

    s = SCENARIOS[name]
    pricer, design = build_pricer(s), DesignShape.of(s.speculative)
    rng = np.random.default_rng(len(batches))
    for n, kv, spread in batches:
        kv_lens = kv + rng.integers(0, 1 + spread * 1000, n)
        before = None
        for shape in iteration_passes(design):
            if not PassTimer.applies(pricer, shape):
                assert name == "dp-attention"  # the rest take the timed path
                continue
            q = shape.tokens_per_request
            lens = BatchLens.uniform(q, kv_lens, int(kv_lens.sum()), int(kv_lens.max()))
            timer, priced = PassTimer(pricer, shape, n), build_pricer(s).price_lens(shape, lens).time_s
            assert timer.seconds(lens) == priced
            whole = lens.shifted(shape.kv_offset)
            if before is not None and timer.shares_cores(before):
                assert timer.total(whole, before.core_times(whole)) == priced
            before = timer


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_timed_iterations_run_as_priced_ones(name):
    """A run whose decode iterations are timed in one go (sim/timing.py) has the rows of the same
    run priced pass by pass (keep_passes takes that path): the same floats everywhere."""
    from mtpsim.sim import simulate

    s = SCENARIOS[name].model_copy(update={"workload": SCENARIOS[name].workload.model_copy(
        update={"num_requests": 24, "output_len": 40})})
    timed, priced = simulate(s), simulate(s, keep_passes=True)
    assert len(priced.pass_rows) > 0 and not timed.pass_rows
    assert timed.request_rows == priced.request_rows and timed.iteration_rows == priced.iteration_rows
    assert repr({k: v for k, v in timed.row.items() if k != "sim_wall_s"}) == \
        repr({k: v for k, v in priced.row.items() if k != "sim_wall_s"})  # repr: NaN equals NaN, every float to the bit


def test_recurring_plain_batches_are_timed_once(monkeypatch):
    """IterationTiming remembers run's result by the batch's KV sum and longest: plain decoding's
    batches recur, so test_timed_iterations_run_as_priced_ones[none] checks remembered ones too."""
    from mtpsim.sim import simulate
    from mtpsim.sim.timing import IterationTiming

    calls = {"run": 0, "_run": 0}
    for name in calls:
        original = getattr(IterationTiming, name)
        monkeypatch.setattr(IterationTiming, name, lambda self, batch, f=original, name=name:
                            calls.__setitem__(name, calls[name] + 1) or f(self, batch))
    s = SCENARIOS["none"].model_copy(update={"workload": SCENARIOS["none"].workload.model_copy(
        update={"num_requests": 24, "output_len": 40})})
    simulate(s)
    assert 0 < calls["_run"] < calls["run"] / 2


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e-3), st.floats(0, 1e-3), st.floats(0, 1e-4), st.floats(0, 1e-5),
                          st.floats(0, 1e12), st.floats(0, 1e9), st.integers(1, 64)), max_size=5),
       st.floats(0, 1e-5))
def test_work_plus_is_the_sum_of_rows(rows, launch):
    """Work.plus gives the floats of adding Work.of row by row, then the launch cost."""
    from mtpsim.costs.ops import Op
    from mtpsim.costs.passes import Work
    from mtpsim.costs.roofline import OpTime

    priced = [(Op("x", "gemm", flops=f, kv_bytes=b, comm_bytes=b / 3), OpTime(c, m, comm, o), n)
              for c, m, comm, o, f, b, n in rows]
    start = Work(1e-4, 2e-4, 3e-6, 4e-6, 5e9, 6e8, 7e7, 8e6)
    one_by_one = start
    for row in priced:
        one_by_one = one_by_one + Work.of(*row)
    one_by_one = Work(one_by_one.compute_s, one_by_one.memory_s, one_by_one.comm_s, one_by_one.launch_s + launch,
                      one_by_one.flops, one_by_one.weight_bytes, one_by_one.kv_bytes, one_by_one.comm_bytes)
    assert start.plus(priced, launch) == one_by_one


# ---------------------------------------------------------------------- one event per iteration

@settings(max_examples=300, deadline=None)
@given(st.floats(0, 1e4), st.lists(st.floats(1e-9, 0.05), min_size=1, max_size=8))
def test_one_event_per_iteration_lands_where_one_timeout_per_pass_would(start, times):
    """back_to_back ends at the very float a chain of one timeout per pass reaches."""
    import simpy

    from mtpsim.sim.engine import back_to_back

    def chain(env):
        for t in times:
            yield env.timeout(t)

    ends = []
    for steps in (chain, lambda env: back_to_back(env, times)):
        env = simpy.Environment(initial_time=start)
        env.process(steps(env))
        env.run()
        ends.append(env.now)
    assert ends[0] == ends[1]


def test_pass_rows_come_in_the_order_the_passes_end():
    """With dp replicas an iteration's passes are recorded when it starts; the passes frame is
    still in the order they end, each replica's passes back to back."""
    from mtpsim.scenario import validate
    from mtpsim.sim import simulate

    r = simulate(validate({"name": "rows", "model": "meta-mtp-7b", "hardware": "h100-sxm", "parallel": {"dp": 2},
                           "speculative": {"design": "parallel_heads", "steps": 3}, "acceptance": {"per_depth": [0.9, 0.7, 0.5]},
                           "workload": {"arrival": "closed", "concurrency": 8, "num_requests": 24, "input_len": 128,
                                        "output_len": 32}}), keep_passes=True)
    p = r.passes
    assert set(p.replica) == {0, 1}
    ends = (p.start_s + p.duration_s).to_numpy()
    assert (np.diff(ends) >= -1e-12 * ends[1:]).all()
    for _, lane in p.groupby("replica"):
        assert (lane.start_s.to_numpy()[1:] >= (lane.start_s + lane.duration_s).to_numpy()[:-1] * (1 - 1e-12)).all()


# ---------------------------------------------------------------------- the running batch

def _requests(rng, n, first_id=0):
    from mtpsim.sim.workload import Request
    out = []
    for i in range(n):
        r = Request(first_id + i, 0.0, int(rng.integers(1, 50)), int(rng.integers(1, 30)))
        r.generated = 1
        out.append(r)
    return out


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_running_batch_counts_what_each_request_did(seed, steps):
    """Iterations and accepted drafts, derived when a request leaves the batch, equal a count kept
    per request every iteration; plain decoding's commit (None) is a commit of zeros; all_beyond's
    floor never says more than the fewest left."""
    from mtpsim.sim.batch import RunningBatch

    rng = np.random.default_rng(seed)
    batch = RunningBatch(steps, False)
    kept, done = {}, []  # request_id -> [kv, remaining, iterations, accepted]
    next_id = 0
    for _ in range(60):
        if rng.random() < 0.3:  # requests join between iterations, as prefill adds them
            joining = _requests(rng, int(rng.integers(1, 4)), next_id)
            next_id += len(joining)
            batch.add(joining)
            for r in joining:
                kept[r.request_id] = [r.input_len, r.remaining, 0, 0]
        if not len(batch):
            continue
        remaining = np.array([kept[r.request_id][1] for r in batch.requests])
        accepted = np.minimum(rng.integers(0, steps + 1, len(batch)), remaining - 1)
        emitted = batch.commit(accepted if steps else None)
        assert emitted == int(accepted.sum()) + len(accepted) if steps else emitted == len(accepted)
        for r, a in zip(batch.requests, accepted.tolist() if steps else [0] * len(batch)):
            k = kept[r.request_id]
            k[0], k[1], k[2], k[3] = k[0] + a + 1, k[1] - a - 1, k[2] + 1, k[3] + a
        np.testing.assert_array_equal(batch.kv, [kept[r.request_id][0] for r in batch.requests])
        assert (batch.kv_sum, batch.kv_max) == (int(batch.kv.sum()), int(batch.kv.max()))
        assert [batch.all_beyond(k) for k in range(steps + 2)] == [bool((batch.remaining > k).all())
                                                                   for k in range(steps + 2)]
        done += batch.pop_finished()
    for r in done:
        assert (r.generated, r.iterations, r.accepted) == (r.output_len, kept[r.request_id][2], kept[r.request_id][3])


def test_plain_commit_is_a_commit_of_zeros():
    from mtpsim.results import Records
    from mtpsim.sim.batch import RunningBatch

    rng = np.random.default_rng(3)
    a, b = RunningBatch(0, False), RunningBatch(0, False)
    a.add(_requests(rng, 7))
    b.add(_requests(np.random.default_rng(3), 7))
    assert a.commit(None) == b.commit(np.zeros(7, np.int64)) == 7
    for field in ("kv", "remaining"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert (a.kv_sum, a.kv_max) == (b.kv_sum, b.kv_max)
    ra, rb = Records(), Records()
    ra.add_accepts(None, 0, 7)
    rb.add_accepts(np.zeros(7, np.int64), 0, 7)
    np.testing.assert_array_equal(ra.accepts(), rb.accepts())


def test_a_profile_builds_only_the_tables_its_lookups_pick():
    """Tables are built from their config's rows when a lookup first picks them, once."""
    from mtpsim.costs import build_pricer
    from mtpsim.designs import DesignShape, iteration_passes

    s = SCENARIOS["nextn"]
    pricer = build_pricer(s)
    for shape in iteration_passes(DesignShape.of(s.speculative)):
        pricer.price(shape, np.full(8, shape.tokens_per_request), np.full(8, 500))
    configs = [c for by_keys in pricer.costs.tables.values() for cs in by_keys.values() for c in cs]
    built = [c for c in configs if c.built is not None]
    assert 0 < len(built) < len(configs) / 10
    assert all(c.table() is c.built for c in built)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(SCENARIOS)),
       st.lists(st.tuples(st.integers(1, 300), st.integers(0, 70_000), st.integers(0, 10)), min_size=1, max_size=4))
def test_a_core_priced_without_its_op_is_priced_as_with_it(name, batches):
    """A pass whose attention cores a CorePricer priced (no Op) costs what it costs with its ops
    built and priced by `costs.time` (keep_ops), to the float and the source label."""
    from mtpsim.costs import build_pricer
    from mtpsim.designs import DesignShape, iteration_passes, prefill_passes

    s = SCENARIOS[name]
    pricer, design = build_pricer(s), DesignShape.of(s.speculative)
    rng = np.random.default_rng(len(batches))
    for n, kv, spread in batches:
        kv_lens = kv + rng.integers(0, 1 + spread * 1000, n)
        for shape in iteration_passes(design) + prefill_passes(design):
            q = np.full(n, shape.tokens_per_request) if shape.kind != "prefill" else rng.integers(1, 512, n)
            assert _fields(pricer.price(shape, q, kv_lens)) == _fields(pricer.price(shape, q, kv_lens, keep_ops=True))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300) | st.integers(1, 16), st.sampled_from([1.0, 2.0, 4.0, 2.5]), st.integers(0, 70_000),
                          st.sampled_from([64, 2048, 7168]), st.booleans()), min_size=1, max_size=6))
def test_a_frame_priced_without_its_op_is_priced_as_with_it(frames):
    """A cost model's frame pricer (pass_timer.py reads it) gives `time` of the pass frame's Op to
    the float: a calibrated profile's pass table (the CPU profile), the roofline a profile without
    one falls back to (h200-sglang), and the roofline model itself."""
    from mtpsim.catalog import load_hardware
    from mtpsim.costs import build_pricer
    from mtpsim.costs.calibrated import CalibratedCosts
    from mtpsim.costs.ops import pass_frame
    from mtpsim.costs.profile import PROFILES_DIR

    roofline = SCENARIOS["nextn"].model_copy(update={"cost": SCENARIOS["nextn"].cost.model_copy(update={"model": "roofline"})})
    models = [build_pricer(SCENARIOS["nextn"]).costs, build_pricer(roofline).costs,
              CalibratedCosts.from_profile(PROFILES_DIR / "cpu", load_hardware("cpu"))]
    for costs in models:
        for batch, q, kv, d, graphs in frames:
            for kv_max in (kv, kv % 4096 + 64.0):  # the CPU profile's grid is short
                found = costs.frame_pricer(batch, q, d, graphs).times(kv_max)
                t = costs.time(pass_frame(batch, q, kv_max, d), graphs)
                assert found is None or found == (t.compute_s, t.memory_s, t.comm_s, t.launch_s)


def test_frame_pricers_price_inside_the_grid():
    """The CPU profile's pass table is read by its frame pricer (no fall-back to the Op) inside its grid."""
    from mtpsim.catalog import load_hardware
    from mtpsim.costs.calibrated import CalibratedCosts
    from mtpsim.costs.core_pricer import FramePricer
    from mtpsim.costs.profile import PROFILES_DIR

    costs = CalibratedCosts.from_profile(PROFILES_DIR / "cpu", load_hardware("cpu"))
    table = costs.tables["pass"][()][0].table()
    batch, q, kv = (table.axes[a][1].item() for a in ("batch", "q", "kv"))
    pricer = costs.frame_pricer(batch, q, 256, False)
    assert isinstance(pricer, FramePricer) and pricer.times(kv) is not None


def test_the_calibrated_cores_have_core_pricers():
    """The speed path is taken: DeepSeek-V3's MLA on a calibrated H200 profile gets a CorePricer,
    and each of its rows prices (no fall-back to the Op) inside the measured grid."""
    from mtpsim.costs import build_pricer
    from mtpsim.costs.ops import BatchLens

    pricer = build_pricer(SCENARIOS["nextn"])
    (kernel, _), = pricer._kernels("target")
    core = pricer.costs.core_pricer(kernel, True)
    assert core is not None
    for q in (1, 4):
        lens = BatchLens.uniform(q, np.full(32, 900), 32 * 900, 900)
        priced = core.price(lens)
        assert priced is not None  # None: the caller would fall back to pricing the Op
        # and the price is the Op's, to the bit (core_pricer.py: the same floats in the same order)
        assert priced[1] == pricer.costs.time(kernel.core(lens), True), q
