"""The attention core of a pass: what one GPU computes and moves for attention over each
request's query and cached-KV lengths (BatchLens), as an Op (AttentionKernel, the sparse
indexer's IndexerKernel, a linear-attention state update) or as the counts a pass sums
(CoreCounts). The per-layer shapes it reads (KV bytes per token, heads per GPU) are
attention.py's. Like ops.py, which re-exports these names, it only counts.

Units: flops in FLOP, bytes in bytes, token counts in tokens.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from mtpsim.costs.attention import heads_per_gpu, index_cache_bytes, kv_bytes_per_token, linear_state_bytes
from mtpsim.costs.op import ACT, MLA_ABSORB_MAX_Q, Op
from mtpsim.specs import DTYPE_BYTES, AttentionSpec


class CoreCounts(NamedTuple):
    """What a pass's sum reads of an op (`Work.plus`), for an attention core a cost model priced
    without building its Op (core_pricer.py's `CorePricer`)."""

    flops: float
    kv_bytes: float
    weight_bytes: float = 0.0
    comm_bytes: float = 0.0


class BatchLens(NamedTuple):
    """A batch's query and cached-KV lengths as the attention cost needs them: counts, sums and
    the longest, in O(1) once built, plus the per-request lengths for what sums cannot give
    (sliding windows; a caller splitting the batch into groups). `q` is one query length for
    every request (decode-shaped passes) or an array; `kv` the cached tokens per request before
    `offset` more (a chained draft's own earlier tokens). A named tuple: a few are made every
    iteration, and a tuple is the cheapest immutable record to make."""

    batch: int
    q_tokens: float     # sum of q
    q_max: float
    kv_tokens: float    # sum of visible KV, kv + offset + q
    visible_max: float  # the longest visible KV
    qk_tokens: float    # query-key pairs, sum of q * (kv + offset + (q + 1) / 2) (causal average)
    qkv_tokens: float   # sum of q * kv over the committed KV alone (a tree mask adds its own keys)
    q: object
    kv: np.ndarray
    offset: int = 0

    @classmethod
    def of(cls, q_lens: np.ndarray, kv_lens: np.ndarray) -> BatchLens:
        """From per-request arrays (q_lens[i] new tokens after kv_lens[i] cached)."""
        per_query = kv_lens + (q_lens + 1) / 2  # query j of q sees kv + j + 1 keys
        return cls(len(q_lens), float(q_lens.sum()), float(q_lens.max(initial=0)), float((kv_lens + q_lens).sum()),
                   float((kv_lens + q_lens).max(initial=0)), float((q_lens * per_query).sum()),
                   float((q_lens * kv_lens).sum()), q_lens, kv_lens)

    @classmethod
    def split(cls, q_lens: np.ndarray, kv_lens: np.ndarray, groups: int) -> list[BatchLens]:
        """`of` for each of `groups` groups, request i in group i mod groups, in one pass over the
        arrays: laid out as rows of `groups` columns (column g holds q_lens[g::groups]), zero-padded,
        which adds nothing to a sum or a max. The lengths are whole tokens, so every sum is exact
        and equals the group's own `of`."""
        n = len(q_lens)
        rows = -(-n // groups)
        pad = rows * groups - n
        q2 = np.zeros(rows * groups, np.result_type(q_lens))
        k2 = np.zeros(rows * groups, np.result_type(kv_lens))
        q2[:n], k2[:n] = q_lens, kv_lens
        q2, k2 = q2.reshape(rows, groups), k2.reshape(rows, groups)
        visible = k2 + q2
        sizes = [rows - (g >= groups - pad) for g in range(groups)]  # the last row's padding: its last `pad` columns
        columns = zip(sizes, q2.sum(axis=0).tolist(), q2.max(axis=0, initial=0).tolist(), visible.sum(axis=0).tolist(),
                      visible.max(axis=0, initial=0).tolist(), (q2 * (k2 + (q2 + 1) / 2)).sum(axis=0).tolist(),
                      (q2 * k2).sum(axis=0).tolist())
        return [cls(size, float(qs), float(qm), float(vs), float(vm), float(qk), float(qkv),
                    q_lens[g::groups], kv_lens[g::groups])
                for g, (size, qs, qm, vs, vm, qk, qkv) in enumerate(columns)]

    @classmethod
    def uniform(cls, q: int, kv_lens: np.ndarray, kv_sum: int, kv_max: int) -> BatchLens:
        """Every request adds q tokens after kv_lens[i] cached; kv_sum and kv_max are kv_lens'
        sum and max, which the caller may keep as running totals."""
        n = len(kv_lens)
        return cls(n, float(n * q), float(q if n else 0), float(kv_sum + n * q), float(kv_max + q if n else 0),
                   float(q * kv_sum + n * q * (q + 1) / 2), float(q * kv_sum), q, kv_lens)

    def shifted(self, offset: int) -> BatchLens:
        """The same batch with `offset` more cached tokens per request."""
        if not offset:
            return self
        n = self.batch
        return BatchLens(n, self.q_tokens, self.q_max, self.kv_tokens + n * offset,
                         self.visible_max + offset if n else 0.0, self.qk_tokens + self.q_tokens * offset,
                         self.qkv_tokens, self.q, self.kv, self.offset + offset)

    def requests(self) -> tuple[np.ndarray, np.ndarray]:
        """(q_lens, kv_lens) per request, the offset added (allocates: for windows and groups)."""
        q = self.q if isinstance(self.q, np.ndarray) else np.full(self.batch, self.q)
        return q, self.kv + self.offset


def attention_core(att: AttentionSpec, q_lens: np.ndarray, kv_lens: np.ndarray, kv_dtype: str,
                   tp: int, act: str = ACT, cached: int = 0, tree_keys: float = 0.0) -> Op:
    """The attention kernel for a batch: request i has q_lens[i] new tokens after kv_lens[i] + cached."""
    return AttentionKernel(att, kv_dtype, tp, act).core(BatchLens.of(q_lens, kv_lens).shifted(cached), tree_keys)


class AttentionKernel:
    """One attention kind on one GPU of a group of `tp`: the numbers every batch's core shares
    (heads per GPU, KV bytes per token, widths), worked out once; a pricer keeps one per kind
    and calls `core` every pass.

    `decode_path`: the kernel of passes the engines run on their decode path however many query
    tokens a request brings (verify, draft and draft-extend passes). Without it, a request of
    more than MLA_ABSORB_MAX_Q queries is prefill-sized (a prompt or its chunk): MLA unabsorbed,
    and a profile's prefill rows price it (calibrated.py). With it, never: SGLang's DeepSeek MLA
    runs TARGET_VERIFY and DRAFT_EXTEND absorbed whatever their length
    (`models/deepseek_v2.py` `_dispatch_attn_forward_method`: the MHA branch is for plain
    extends only) and vLLM V1 sends a request to its MLA decode path by query length up to
    1 + num_speculative_tokens (`reorder_batch_threshold`), so a tree verify of 65 tokens is
    priced as 64 extrapolated, not 2.7x cheaper as a prompt."""

    def __init__(self, att: AttentionSpec, kv_dtype: str, tp: int, act: str = ACT, decode_path: bool = False):
        self.att, self.kv_dtype, self.tp, self.act = att, kv_dtype, tp, act
        self.decode_path = decode_path
        self.prefill_q = math.inf if decode_path else MLA_ABSORB_MAX_Q  # query tokens a request past which it is a prompt
        self.heads = heads_per_gpu(att.num_heads, tp)
        self.kv_bytes_per_token = kv_bytes_per_token(att, kv_dtype, tp)
        if att.kind == "mla":  # unabsorbed (prefill-sized queries), and absorbed: scores over kv_lora + rope, values over kv_lora
            self.unabsorbed_width = att.qk_nope_head_dim + att.qk_rope_head_dim + att.v_head_dim
            self.width = 2 * att.kv_lora_rank + att.qk_rope_head_dim
        else:
            self.width = att.head_dim + (att.v_head_dim or att.head_dim) if att.kind == "gqa" else 0
        self.query_width = att.head_dim or att.kv_lora_rank
        # what `counts` reads of the spec every pass, read once (the spec's `sparse` is a property)
        self.window, self.sparse, self.mla = att.window, att.sparse, att.kind == "mla"
        self.act_bytes = DTYPE_BYTES[act]
        # the lookup keys after batch, q and the KV lengths, in the order a core's shape lists them
        self.shape = {"heads": self.heads, "window": att.window or 0,
                      **(_attention_widths(att, tp) if att.kind != "linear" else {}), "kv_dtype": kv_dtype,
                      "query_only": att.kv_source is not None, **({"decode_path": True} if decode_path else {})}

    def core(self, lens: BatchLens, tree_keys: float = 0.0) -> Op:
        """The kernel over `lens` (`counts`: its flops and bytes)."""
        att = self.att
        if att.kind == "linear":
            return linear_core(att, lens.batch, lens.q_tokens, self.tp)
        flops, kv_bytes, act_bytes, kv_tokens, kv_max = self.counts(lens, tree_keys)
        return Op("attn.core", "attention", flops=flops, kv_bytes=kv_bytes, act_bytes=act_bytes, dtype=self.act,
                  shape={"kind": att.kind, "batch": lens.batch, "q": lens.q_tokens / max(lens.batch, 1),
                         "kv_tokens": kv_tokens, "kv_max": kv_max, **self.shape})

    def counts(self, lens: BatchLens, tree_keys: float = 0.0) -> tuple[float, float, float, float, float]:
        """(flops, KV bytes, activation bytes, visible KV tokens, longest visible KV) of the
        kernel over `lens` (not linear attention: `core`).

        Bytes: each request reads its visible KV once, min(kv + cached + q, window) tokens, so
        cost follows the *sum* of per-request lengths. Flops: QK^T and PV, 2 * 2 * q * kv * heads
        * head width. `tree_keys` > 0: a tree mask, each query reading kv_lens[i] + tree_keys keys
        (its ancestors and itself) instead of the causal kv + cached + (q + 1) / 2."""
        heads, window = self.heads, self.window
        kv_tokens, qk_tokens, kv_max = lens.kv_tokens, lens.qk_tokens, lens.visible_max
        if tree_keys:  # a tree mask: each query reads its request's committed KV and tree_keys more
            qk_tokens = lens.qkv_tokens + lens.q_tokens * tree_keys
        if window is not None:  # a per-request cap: the sums need the lengths themselves
            q_lens, kv_lens = lens.requests()
            visible = np.minimum(kv_lens + q_lens, window)
            per_query = lens.kv + tree_keys if tree_keys else kv_lens + (q_lens + 1) / 2
            per_query = np.minimum(per_query, window)
            kv_tokens, qk_tokens = float(visible.sum()), float((q_lens * per_query).sum())
            kv_max = float(visible.max(initial=0))
        if self.sparse:  # each query attends its top-k keys; a request reads the union of its queries'
            kv_tokens, qk_tokens, kv_max = sparse_lens(lens, self.att.index_topk, tree_keys)
        if self.mla and lens.q_max > self.prefill_q:
            # prefill-sized queries run MLA unabsorbed (engines expand K and V from the latent)
            flops = 2.0 * qk_tokens * heads * self.unabsorbed_width
        else:
            flops = 2.0 * qk_tokens * heads * self.width
        act_bytes = 2 * lens.q_tokens * heads * self.query_width * self.act_bytes
        return flops, kv_tokens * self.kv_bytes_per_token, act_bytes, kv_tokens, kv_max


def sparse_lens(lens: BatchLens, topk: int, tree_keys: float = 0.0) -> tuple[float, float, float]:
    """(KV tokens read, query-key pairs, the longest read) when each query attends at most `topk`
    of the keys it sees: a request reads min(visible, q x topk) cached entries (its queries'
    selections, at most all it has), a query min(its keys, topk)."""
    kv_lens = np.asarray(lens.kv) + lens.offset
    q_lens = lens.q if isinstance(lens.q, np.ndarray) else np.full(len(kv_lens), lens.q)
    per_query = np.asarray(lens.kv) + tree_keys if tree_keys else kv_lens + (q_lens + 1) / 2
    read = np.minimum(kv_lens + q_lens, q_lens * topk)
    return float(read.sum()), float((q_lens * np.minimum(per_query, topk)).sum()), float(read.max(initial=0))


class IndexerKernel:
    """DSA's lightning indexer on one GPU (DeepSeek-V3.2, arXiv 2512.02556 §2.1; DeepSeek-V3.2-Exp
    inference/model.py `Indexer`): every query token scores every key it sees with index_n_heads
    ReLU dot products of index_head_dim in FP8 (fp8_mqa_logits), weighted per head, and the top
    index_topk are kept. Flops 2 x query-key pairs x heads x width; bytes the FP8 key cache over
    the visible KV and the FP32 scores written and read back by the top-k; two kernels. No
    measured table holds it: the roofline prices it (source `roofline`). QSA (Qwen4-Exp, gqa with
    an indexer) scores one pooled key per index_block tokens and keeps whole blocks (vLLM v0.34.0
    vllm/models/qwen4_exp/nvidia/ops/qsa_indexer.py `qsa_select_paged_decode`): pairs, keys and
    scores are the per-token ones over index_block (key_bytes is already per token)."""

    def __init__(self, att: AttentionSpec, act: str = ACT):
        self.att, self.act = att, act
        self.key_bytes = index_cache_bytes(att)
        self.block = att.index_block or 1

    def core(self, lens: BatchLens, tree_keys: float = 0.0) -> Op:
        att = self.att
        pairs = (lens.qkv_tokens + lens.q_tokens * tree_keys if tree_keys else lens.qk_tokens) / self.block
        return Op("attn.indexer", "indexer", flops=2.0 * pairs * att.index_n_heads * att.index_head_dim,
                  kv_bytes=lens.kv_tokens * self.key_bytes, act_bytes=2 * 4.0 * pairs, kernels=2, dtype="fp8",
                  shape={"batch": lens.batch, "q": lens.q_tokens / max(lens.batch, 1), "kv_tokens": lens.kv_tokens,
                         "topk": att.index_topk})


def _attention_widths(att: AttentionSpec, tp: int) -> dict:
    """KV heads per GPU and the score / value widths per head (MLA: one latent head, scores over
    kv_lora_rank + rope, values over kv_lora_rank), for calibrated lookups."""
    if att.kind == "mla":
        return {"kv_heads": 1, "head_dim": att.kv_lora_rank + att.qk_rope_head_dim, "v_head_dim": att.kv_lora_rank}
    return {"kv_heads": heads_per_gpu(att.num_kv_heads, tp), "head_dim": att.head_dim,
            "v_head_dim": att.v_head_dim or att.head_dim}


def linear_core(att: AttentionSpec, batch: int, tokens: float, tp: int) -> Op:
    """Gated DeltaNet: read each request's state, update it per token, write it back; for
    speculative verify every intermediate state is kept for rollback (one write per token). Its
    shape keys the measured `linear_state` rows (costs/lookup.py): the conv update and recurrent
    kernels of a decode, the conv and chunked kernels of a prefill; a verify's from the decode rows
    at its work."""
    heads = heads_per_gpu(att.num_heads, tp)
    state = linear_state_bytes(att, tp)
    writes = tokens if tokens > batch else batch
    flops = 6.0 * tokens * heads * att.head_dim * att.value_head_dim
    return Op("attn.linear_state", "state", flops=flops, kv_bytes=state * (batch + writes), kernels=2,
              shape={"kind": "linear", "batch": batch, "q": tokens / max(batch, 1), "heads": heads,
                     "kv_heads": heads_per_gpu(att.num_kv_heads, tp), "head_dim": att.head_dim,
                     "v_head_dim": att.value_head_dim})
