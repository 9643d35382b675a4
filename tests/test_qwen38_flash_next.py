"""Qwen3.8-Flash-Next (qwen4_exp) as a target, built from the simulator's blocks: Gated DeltaNet as
`linear`, Qwen Sparse Attention as `gqa` with an indexer over one key per 4 tokens (index_block),
the four hyper-connection copies as a low-rank gated residual (hc_mult + hc_lowrank), the PLE
n-gram table as an Engram table with one global FP8 scale. The parameter totals the sources give
(125B main, 51B table, ~4B MTP), the KV a token adds at TP4, the table in host memory under
VLLM_PLE_CPU_OFFLOAD, the layer pattern; sources are cited in
mtpsim/data/models/qwen3.8-flash-next.yaml."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from mtpsim import catalog
from mtpsim import scenario as sc
from mtpsim.costs import build_pricer, part_ops
from mtpsim.costs.attention import index_cache_bytes, kv_bytes_per_token
from mtpsim.costs.attention_core import IndexerKernel
from mtpsim.costs.engram import table_bytes_per_gpu
from mtpsim.costs.ops import BatchLens
from mtpsim.memory import part_kv
from mtpsim.specs import DTYPE_BYTES, AttentionSpec
from tests.test_bad_input import one_line_error, run

MODEL = "qwen3.8-flash-next"
D, VOCAB = 2560, 248320


def _scenario(tables: str = "host_per_rank", design: str = "nextn", tp: int = 4) -> sc.Scenario:
    return sc.validate({"name": "m", "model": MODEL, "hardware": "h100-sxm", "parallel": {"tp": tp},
                        "engine": {"kind": "vllm", "engram_tables": tables},
                        "speculative": {"design": design, **({"steps": 2} if design != "none" else {})},
                        **({"acceptance": {"accept_length": 1.37}} if design != "none" else {}),
                        "workload": {"concurrency": 8, "num_requests": 8, "input_len": 1024, "output_len": 8}})


def _params(part: str) -> Counter:
    """Parameters of a part at tp 1, by op name: every op's weight bytes over its weight dtype."""
    dep = build_pricer(_scenario(tp=1)).deployment
    record, found = dep.part(part), Counter()
    rows = [(op, n) for n, op in part_ops.layer_ops(dep, record, part_ops.ALL_EXPERTS_TOKENS)]
    rows += [(op, n) for op, n in record.edge(dep, record, part_ops.ALL_EXPERTS_TOKENS, 1, True, 1) if op is not None]
    for op, n in rows:
        if op.weight_bytes:
            found[op.name] += n * op.weight_bytes / DTYPE_BYTES[op.dtype]
    return found


def test_layer_pattern_is_3_gdn_to_1_qsa_with_the_table_at_layer_2():
    model = catalog.load_model(MODEL)
    layers = model.expanded_layers
    assert len(layers) == 48
    kinds = [model.attention_kinds[layer.attention].kind for layer in layers]
    assert [i for i, k in enumerate(kinds) if k == "gqa"] == list(range(3, 48, 4))  # full_attention_interval 4
    assert kinds.count("linear") == 36
    assert [i for i, layer in enumerate(layers) if layer.engram] == [1]  # ple_layer_ids [2]: (layer_idx + 1) == 2
    assert {model.ffn_kinds[layer.ffn].num_experts for layer in layers} == {512}
    qsa = model.attention_kinds["qsa"]
    assert qsa.sparse and (qsa.index_topk, qsa.index_block, qsa.index_n_heads, qsa.index_head_dim) == (2048, 4, 4, 128)
    assert {a.hc_copies for a in model.attention_kinds.values()} == {4}
    assert model.mtp.num_layers == 1 and model.mtp.layer.attention == "qsa"  # its layer is a QSA + MoE layer


def test_parameters_come_to_125b_main_51b_table_and_4b_mtp():
    """Main: the layers, the LM head and the input embedding (memory.py counts the embedding
    apart); table: 320,001,536 rows of 160; MTP: its layer and fc, plus the embedding and LM head
    copies the checkpoint's MTP module carries (the sources' 4B), which mtpsim prices as shared."""
    target = _params("target")
    main = sum(target.values()) + VOCAB * D
    assert main == pytest.approx(125e9, rel=0.02)
    assert target["moe.experts"] == pytest.approx(48 * 512 * 3 * D * 640)
    assert target["hc.down"] + target["hc.up_mix"] == pytest.approx(48 * 2 * (4 * D * 336 + 320 * 4 * D))
    model = catalog.load_model(MODEL)
    assert model.engram.rows[0] * model.engram.head_dim == 51_200_245_760
    assert model.engram.table_bytes == 51_200_245_760  # FP8, one global scale: 47.7 GiB
    mtp = _params("mtp")
    own = sum(v for k, v in mtp.items() if k != "lm_head")
    assert own == pytest.approx(2.6e9, rel=0.02)
    assert own + 2 * VOCAB * D == pytest.approx(4e9, rel=0.05)


def test_kv_per_token_at_tp4_is_12_qsa_layers_of_one_kv_head_and_pooled_index_keys():
    """2 KV heads over tp 4: one a GPU (replicated), K and V 256 wide in BF16, plus one BF16 index
    key of 128 per 4 tokens: 1024 + 64 bytes a layer, 12 layers; GDN keeps per-request state."""
    model = catalog.load_model(MODEL)
    qsa = model.attention_kinds["qsa"]
    assert index_cache_bytes(qsa) == 128 * 2 / 4
    assert kv_bytes_per_token(qsa, "bf16", 4) == 2 * 256 * 2 + 64
    layers = part_kv(build_pricer(_scenario()).deployment, "target")
    assert sum(x.bytes_per_token for x in layers) == pytest.approx(12 * (1024 + 64))


def test_qsa_indexer_scores_one_key_per_four_tokens():
    qsa = catalog.load_model(MODEL).attention_kinds["qsa"]
    dsa_like = AttentionSpec(**{**qsa.model_dump(exclude={"index_block"}, exclude_defaults=True)})
    lens = BatchLens.of(np.array([3, 3]), np.array([1000, 2000]))
    pooled, every = IndexerKernel(qsa).core(lens), IndexerKernel(dsa_like).core(lens)
    assert pooled.flops == pytest.approx(every.flops / 4)
    assert pooled.kv_bytes == pytest.approx(lens.kv_tokens * 128 * 2 / 4)


@pytest.mark.parametrize("tables", ["gpu", "host_per_rank"])
def test_the_table_lives_in_host_memory_under_the_vllm_ple_offload(tables):
    """VLLM_PLE_CPU_OFFLOAD=1: each of the 4 ranks keeps a quarter of the rows in pinned host
    memory, reads the ones it owns for every token over PCIe and all-reduces them; on the GPUs
    the table would be 12.8 GB of each GPU's weights."""
    from mtpsim.designs import DesignShape, iteration_passes
    from mtpsim.memory import memory_budget, pool_rule
    s = _scenario(tables, "none")
    pricer = build_pricer(s)
    budget = memory_budget(pricer, DesignShape.of(s.speculative), pool_rule(s))
    model = catalog.load_model(MODEL)
    table = table_bytes_per_gpu(model.engram, 4, tables)
    assert table == (0.0 if tables != "gpu" else pytest.approx(51_200_245_760 / 4))
    host = memory_budget(build_pricer(_scenario("host_per_rank", "none")), DesignShape.of(s.speculative), pool_rule(s))
    assert budget.target_weight_bytes - host.target_weight_bytes == pytest.approx(table)
    shape = iteration_passes(DesignShape.of(s.speculative))[0]
    ops = pricer.price_lens(shape, BatchLens.uniform(1, np.full(8, 1024), 8 * 1024, 1024), keep_ops=True).ops
    names = {op.name: op for op, _, _ in ops if "engram" in op.name}
    if tables == "gpu":
        assert "engram.host_gather" not in names
        return
    gather = names["engram.host_gather"]
    assert gather.family == "host_copy" and gather.comm_bytes == pytest.approx(8 * 16 * 160 / 4)
    assert "comm.engram_allreduce" in names and "engram.wkv" in names


def test_models_lists_it(capsys):
    from mtpsim.cli import main
    assert main(["models"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[0] == MODEL)
    assert "512 experts top-10" in line and "MTP 1 layer" in line


BAD = [  # (id, the qsa kind's fields changed, key, word)
    ("lowrank-without-copies", {"hc_mult": 1}, "hc_lowrank", "together"),
    ("block-without-indexer", {"index_topk": None, "index_n_heads": None, "index_head_dim": None}, "index_block",
     "indexer"),
]


@pytest.mark.parametrize("case,changes,key,word", BAD, ids=[b[0] for b in BAD])
def test_bad_qsa_kind_is_one_line(tmp_path, capsys, case, changes, key, word):
    qsa = {"kind": "gqa", "num_heads": 24, "num_kv_heads": 2, "head_dim": 256, "index_topk": 2048, "index_n_heads": 4,
           "index_head_dim": 128, "index_block": 4, "hc_mult": 4, "hc_lowrank": 320}
    qsa = {**qsa, **changes}
    flow = "{" + ", ".join(f"{k}: {'null' if v is None else v}" for k, v in qsa.items()) + "}"
    scenario = (f"name: m\nmodel: {{from: {MODEL}, attention_kinds: {{qsa: {flow}}}}}\nhardware: h100-sxm\n"
                "parallel: {tp: 4}\nspeculative: {design: none}\n"
                "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    line = one_line_error(capsys, run(tmp_path, scenario), "model.attention_kinds.qsa", word)
    assert key in line


def test_verify_refuses_what_torchkit_does_not_build(tmp_path, capsys):
    from mtpsim.cli import main
    path = tmp_path / "v.yaml"
    path.write_text(f"name: m\nmodel: {MODEL}\nhardware: h100-sxm\nparallel: {{tp: 1}}\nspeculative: {{design: none}}\n"
                    "workload: {concurrency: 1, num_requests: 1, input_len: 64, output_len: 4}\n")
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": model: " in err[0] and "hyper-connections" in err[0]
