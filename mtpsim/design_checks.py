"""What each design needs of the model and its draft: one check per need, each taking
(speculative, model, draft) and returning (dotted key, reason) when the scenario cannot run, else
None. designs.py lists a design's checks in its record; checks.py runs them.
"""
from __future__ import annotations


def external_fits(spec, model, draft):
    """An external draft reads the target's hidden states and proposes the target's tokens."""
    if draft is None:
        return None
    if draft.backbone_hidden_size != model.hidden_size:
        return ("speculative.draft", f"{draft.name!r} reads hidden states {draft.backbone_hidden_size} wide "
                f"(backbone_hidden_size) and model {model.name!r} has hidden_size {model.hidden_size}")
    if draft.vocab_size != model.vocab_size:
        return ("speculative.draft", f"{draft.name!r} proposes tokens of a {draft.vocab_size}-token vocabulary and "
                f"model {model.name!r} has {model.vocab_size}")
    if draft.fused_target_layers is not None and draft.fused_target_layers > model.num_layers:
        return ("speculative.draft.fused_target_layers", f"{draft.name!r} fuses the hidden states of "
                f"{draft.fused_target_layers} target layers and model {model.name!r} has {model.num_layers}")
    if draft.draft_vocab_size is not None and draft.draft_vocab_size > model.vocab_size:
        return ("speculative.draft.draft_vocab_size", f"{draft.name}'s own head covers {draft.draft_vocab_size} "
                f"tokens, more than model {model.name}'s vocabulary of {model.vocab_size}: a draft head prunes "
                "the target's vocabulary, it cannot widen it")
    return None


def assistant_reads_target(spec, model, draft):
    """A frozen-KV assistant's layers are query-only: each reads one target layer's KV cache
    (kv_source), so its KV heads, head widths and window are that layer's."""
    if draft is None:
        return None
    for name in dict.fromkeys(layer.attention for layer in draft.expanded_layers):
        att = draft.attention_kinds[name]
        key = f"speculative.draft.attention_kinds.{name}"
        if att.kv_source is None:
            return (f"{key}.kv_source", f"the {name!r} layers of assistant {draft.name!r} name no kv_source: a frozen-KV "
                    "assistant keeps no cache of its own and reads the target's (target_last_sliding or target_last_full)")
        try:
            source = model.kv_source_kind(att.kv_source)
        except ValueError as exc:
            return (f"{key}.kv_source", str(exc))
        for field in ("num_kv_heads", "head_dim", "v_head_dim", "window"):
            mine, theirs = getattr(att, field), getattr(source, field)
            if field == "v_head_dim":
                mine, theirs = mine or att.head_dim, theirs or source.head_dim
            if mine != theirs:
                return (f"{key}.{field}", f"{mine} here, but the target layer it reads ({att.kv_source} of model "
                        f"{model.name!r}) has {theirs}: a query-only layer reads that layer's cache as it is")
    return None


def block_fits(spec, model, draft):
    """A block drafter reads the target's hidden states at its taps and borrows its embedding
    and LM head, so its width is the target's; a DSpark drafter is built for one target."""
    if draft is None:
        return ("speculative.draft", f"block needs a block drafter (a catalog entry with role: block_draft) and "
                f"model {model.name!r} names none (block_draft)")
    if draft.block.built_for is not None and draft.block.built_for != model.name:
        return ("speculative.draft", f"{draft.block.kind} drafter {draft.name!r} was built for "
                f"{draft.block.built_for!r} (block.built_for), not model {model.name!r}")
    depth = draft.block.target_num_layers
    if depth is not None and depth != model.num_layers:
        return ("speculative.draft", f"{draft.name!r} was trained against a target of {depth} layers "
                f"(block.target_num_layers: num_target_layers in its config.json), not model {model.name}'s "
                f"{model.num_layers}")
    if draft.backbone_hidden_size != model.hidden_size or draft.hidden_size != model.hidden_size:
        return ("speculative.draft", f"{draft.name!r} borrows the target's LM head and reads its hidden states: "
                f"hidden_size {draft.hidden_size} and backbone_hidden_size {draft.backbone_hidden_size} must be "
                f"model {model.name}'s {model.hidden_size}")
    if draft.vocab_size != model.vocab_size:
        return ("speculative.draft", f"{draft.name!r} proposes tokens of a {draft.vocab_size}-token vocabulary and "
                f"model {model.name!r} has {model.vocab_size}")
    linear = sorted(k for k, a in draft.attention_kinds.items() if a.kind == "linear")
    if linear:
        return ("speculative.draft", f"{draft.name!r} has linear attention {linear}: a block drafter injects "
                "context as K/V, so its layers need gqa or mla attention")
    return None


def block_taps(spec, model, draft):
    if draft is None:
        return None
    taps = draft.block.target_layer_ids
    missing = [i for i in taps if i >= model.num_layers]
    if missing:
        return ("speculative.draft.block.target_layer_ids", f"{draft.name!r} taps target layers {missing} and model "
                f"{model.name!r} has {model.num_layers} (layers 0..{model.num_layers - 1})")
    return None


def block_size(spec, model, draft):
    if draft is None:
        return None
    most = draft.block.block_size - 1
    if spec.steps > most:
        return ("speculative.steps", f"{spec.steps} drafts need a block of {spec.steps + 1} positions and "
                f"{draft.name!r} was trained for block_size {draft.block.block_size} (at most {most} drafts)")
    return None


def not_block_checkpoint(spec, model, draft):
    """A checkpoint whose draft module is a block drafter (DSpark) drafts a block per forward; the
    serial MTP path cannot run it (vLLM refuses it: PR #46965)."""
    if draft is None and model.mtp is None and model.block_draft is not None:
        return ("speculative.design", f"model {model.name}'s draft module is the block drafter "
                f"{model.block_draft!r}, which the serial MTP path ({spec.design}) cannot run: use design block")
    return None


def own_mtp_or_external(spec, model, draft):
    if draft is None and model.mtp is None:
        return ("speculative.draft", f"nextn needs MTP layers or an external draft (a catalog entry with role: "
                f"draft) and model {model.name!r} has neither: give speculative.draft, or model.mtp "
                "({num_layers: N, layer: {attention: KIND, ffn: KIND}})")
    return None


def chained_mtp(spec, model, draft):
    """nextn / multi_layer chain MTP layers: a model's own draft must not be parallel heads."""
    if draft is None and model.mtp is None:
        return ("speculative.design", f"{spec.design} needs MTP layers and model {model.name!r} has none")
    if draft is None and model.mtp.parallel:
        return ("speculative.design", f"model {model.name}'s draft is {model.mtp.num_layers} parallel heads, "
                f"not chained MTP layers: use design parallel_heads")
    return None


def takes_no_draft(spec, model, draft):
    if spec.draft is not None:
        return ("speculative.draft", f"{spec.design} runs the model's own MTP layers and takes no external draft")
    return None


def has_parallel_heads(spec, model, draft):
    if model.mtp is None or not model.mtp.parallel:
        what = "no MTP layers" if model.mtp is None else "chained MTP layers (mtp.parallel is false)"
        return ("speculative.design", f"parallel_heads needs parallel heads and model {model.name!r} has {what}")
    return None


def one_layer_per_step(spec, model, draft):
    if model.mtp is not None and spec.steps > model.mtp.num_layers:
        return ("speculative.steps",
                f"{spec.design} runs one MTP layer per step and {model.name!r} has {model.mtp.num_layers}")
    return None

