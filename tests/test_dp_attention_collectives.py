"""DP attention's per-layer collectives as SGLang v0.5.12 runs them (costs/dp_attention.py,
costs/comms.py attn_tp_scatter_gather): an MoE layer under wide EP (DeepEP) reduce-scatters the
attention output over its group and all-gathers the next layer's input, through NCCL; a layer
whose MLP takes the group's full tokens all-reduces once. The NCCL rows come from
aiconfigurator's table of the NCCL version its system file names (calibration/aic_nccl.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mtpsim.calibration.aic_nccl import nccl_rows
from mtpsim.catalog import load_hardware, load_model
from mtpsim.costs import comms
from mtpsim.costs.calibrated import CalibratedCosts, lookup_point
from mtpsim.costs.passes import PassShape, Pricer
from mtpsim.costs.profile import PROFILES_DIR
from mtpsim.costs.roofline import RooflineCosts

DECODE = PassShape("decode", "target", 1, 1)
H200 = load_hardware("h200")


def op_names(tp: int, ep: int, attention_dp: int, model: str = "mimo-v2-flash") -> dict[str, int]:
    p = Pricer.of(load_model(model), H200, RooflineCosts(H200), tp=tp, ep=ep, attention_dp=attention_dp)
    ops = p.price(DECODE, np.ones(2, np.int64), np.array([512, 512]), keep_ops=True).ops
    out: dict[str, int] = {}
    for op, _, count in ops:
        out[op.name] = out.get(op.name, 0) + count
    return out


def test_wide_ep_moe_layers_reduce_scatter_and_all_gather():
    """MiMo-V2-Flash, tp 8 / ep 8 / dp 2 (P9's layout): each of the 47 MoE layers runs one
    reduce-scatter and one all-gather over its 4 attention GPUs; only the dense layer 0 keeps its
    all-reduce."""
    names = op_names(8, 8, 2)
    assert names["comm.attn_reduce_scatter"] == 47
    assert names["comm.attn_all_gather"] == 47
    assert names["comm.allreduce"] == 1


def test_gathered_tp_keeps_one_all_reduce():
    """Without an all-to-all backend (ep < tp) the MLP takes the gathered tokens
    (communicator.py: FULL mode): one all-reduce per layer, no scatter/gather pair."""
    names = op_names(8, 1, 2)
    assert "comm.attn_reduce_scatter" not in names and "comm.attn_all_gather" not in names
    assert names["comm.allreduce"] == 48


def test_the_pair_is_one_buffer_each_over_the_attention_group():
    ops = comms.attn_tp_scatter_gather(tokens=4, d=4096, a=4)
    assert [op.shape["op"] for op in ops] == ["reduce_scatter", "all_gather"]
    assert all(op.family == "collective" and op.shape["ranks"] == 4 and op.shape["bytes"] == 4 * 4096 * 2 for op in ops)
    assert comms.attn_tp_scatter_gather(tokens=4, d=4096, a=1) == []


def test_h200_prices_them_from_nccl_rows_not_the_custom_all_reduce():
    """The committed h200-sglang profile holds the NCCL rows; one 4-GPU reduce-scatter of a
    decode-sized buffer is priced from them (`calibrated`) and costs more than the custom
    all-reduce of the same buffer (NCCL's launch latency against the one-shot kernel)."""
    costs = CalibratedCosts.from_profile(PROFILES_DIR / "h200-sglang", H200)
    rs, _ = comms.attn_tp_scatter_gather(tokens=1, d=4096, a=4)
    t = costs.time(rs, graphs=True)
    assert t.source.startswith("calibrated")
    ar = comms.allreduce(1, 4096, 4)
    assert t.comm_s > costs.time(ar, graphs=True).comm_s
    assert lookup_point(rs)[:2] == ("collective", ("reduce_scatter", 4))


def test_nccl_rows_take_the_version_the_system_names(tmp_path):
    """aic_nccl reads comm/nccl/<misc.nccl_version>/ of the system, half rows of the two ops, the
    device's own, bytes = elements x 2, the fastest of repeated rows, milliseconds to seconds."""
    (tmp_path / "sys_x.yaml").write_text("misc:\n  nccl_version: '2.26.2'\n")
    rows = [
        {"op_name": "reduce_scatter", "nccl_dtype": "half", "num_gpus": 4, "message_size": 1024, "latency": 0.008},
        {"op_name": "reduce_scatter", "nccl_dtype": "half", "num_gpus": 4, "message_size": 1024, "latency": 0.007},
        {"op_name": "all_gather", "nccl_dtype": "int8", "num_gpus": 4, "message_size": 1024, "latency": 0.001},
        {"op_name": "all_reduce", "nccl_dtype": "half", "num_gpus": 4, "message_size": 1024, "latency": 0.001},
    ]
    for version, scale in (("2.26.2", 1.0), ("2.29.2", 0.1)):  # another version's rows are never read
        folder = tmp_path / "data" / "sys_x" / "comm" / "nccl" / version
        folder.mkdir(parents=True)
        df = pd.DataFrame(rows).assign(device="GPU", latency=lambda d, s=scale: d.latency * s)
        pd.concat([df, df.assign(device="Other")]).to_parquet(folder / "nccl_perf.parquet")
    got, records = nccl_rows(tmp_path, "sys_x", "GPU")
    assert got.to_dict("records") == [{"op": "reduce_scatter", "ranks": 4, "flops": 0.0, "bytes": 2048.0,
                                       "time_s": pytest.approx(7e-6)}]
    assert records[0]["table"] == "comm/nccl/2.26.2/nccl_perf.parquet"
    assert nccl_rows(tmp_path, "no_such_system", "GPU")[0].empty
