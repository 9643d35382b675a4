"""What a scenario point asks `mtpsim verify` to run: the refusals for what torchkit cannot build,
the shrunken target and drafter (mtpsim/shrink.py), the batch's prompt lengths and the acceptance,
as a torchkit `Setup`. command.py runs it, times it and sets the prediction beside it."""
from __future__ import annotations

import numpy as np

from mtpsim.acceptance import AcceptanceProfile
from mtpsim.designs import DesignShape
from mtpsim.errors import ScenarioError, warn
from mtpsim.shrink import shrink_assistant, shrink_block_drafter, shrink_model
from mtpsim.sim.workload import sample_lengths
from mtpsim.torchkit.measure import Setup


def setup_of(s, device: str) -> Setup:
    """The verification run a scenario point asks for, shrunken."""
    v, design = s.verify, s.speculative.design
    block = s.specs.draft is not None and s.specs.draft.role == "block_draft"
    compressed = sorted(k for k, a in s.specs.model.attention_kinds.items() if a.kind == "compressed")
    if compressed:  # torchkit builds gqa, mla and linear layers
        raise ScenarioError(s.source, "model", f"verify builds gqa, mla and linear attention, and {s.specs.model.name!r} "
                            f"has DeepSeek-V4's compressed attention {compressed}; `mtpsim run` simulates it")
    qwen4 = sorted(k for k, a in s.specs.model.attention_kinds.items()
                   if a.kind != "compressed" and (a.hc_copies > 1 or a.index_block is not None))
    if qwen4:  # torchkit's layers carry no hyper-connection copies and its gqa no indexer
        raise ScenarioError(s.source, "model", f"verify builds no hyper-connections or QSA indexers, and "
                            f"{s.specs.model.name!r} has them in {qwen4}; `mtpsim run` simulates it")
    if block and any(a.kind != "gqa" for a in s.specs.draft.attention_kinds.values()):
        raise ScenarioError(s.source, "speculative.draft", f"verify builds block drafters of gqa layers, and "
                            f"{s.specs.draft.name!r} has others; `mtpsim run` simulates it")
    if s.specs.draft is not None and not block:
        raise ScenarioError(s.source, "speculative.draft", f"verify builds a model's own MTP layers, not an external "
                            f"draft ({s.specs.draft.name!r}); `mtpsim run` simulates it")
    for key, spec in (("model", s.specs.model), ("speculative.draft", s.specs.draft)):
        wide = sorted(k for k, a in (spec.attention_kinds.items() if spec is not None else ()) if a.input_size)
        if wide:  # torchkit's projections read the hidden width: a wider input would be priced, not built
            raise ScenarioError(s.source, key, f"verify builds q/k/v projections that read the hidden states, and "
                                f"{spec.name}'s attention {wide} reads input_size-wide inputs; `mtpsim run` "
                                "simulates it")
    if s.speculative.topk > 1:
        raise ScenarioError(s.source, "speculative.topk", "verify builds chain drafts (topk 1); `mtpsim run` "
                            "simulates trees")
    dtype = v.dtype or ("bf16" if device == "cuda" else "fp32")
    if device == "cpu" and dtype == "fp16":  # the measured loop pays for the conversions the prediction does not
        warn(s.source, "verify.dtype", "fp16 on a CPU: it has no fp16 matmul units, so the loop runs slower than "
             "in fp32, while the prediction prices fp16's half bytes from a profile timed in fp32: expect the "
             "prediction too fast (fp32 is the CPU's own dtype)")
    model = shrink_model(s.specs.model, v, dtype)
    try:
        assistant = shrink_assistant(s.specs.assistant, model, v, dtype) if s.specs.assistant else None
        if block:  # the block drafter rides in the assistant's slot (models.build)
            assistant = shrink_block_drafter(s.specs.draft, model, v, dtype)
    except ValueError as exc:  # too few layers kept for the assistant's KV sources
        raise ScenarioError(s.source, "verify.num_layers", str(exc)) from None
    prompts = prompt_lengths(s)
    steps = DesignShape.of(s.speculative).steps
    profile = AcceptanceProfile.from_section(s.acceptance, steps, s.source) if steps else None
    return Setup(model, assistant, design, steps, prompts, v.iterations, v.warmup_iterations,
                 v.acceptance, profile, device, dtype, s.seed)


def prompt_lengths(s) -> list[int]:
    """The batch's prompt lengths: workload.concurrency of them, drawn from workload.input_len, or,
    for a trace, its first requests' (input_len is then not the scenario's: its default)."""
    if s.workload.arrival != "trace":
        return sample_lengths(np.random.default_rng([s.seed, 0]), s.workload.input_len, s.workload.concurrency).tolist()
    from mtpsim.tracefiles import stream
    lengths, want = [], s.workload.concurrency
    for chunk in stream(s.workload.trace):
        lengths += chunk.input_len[: want - len(lengths)].tolist()
        if len(lengths) == want:
            return [int(n) for n in lengths]
    raise ScenarioError(s.source or "verify", "workload.concurrency", f"verify decodes the trace's first {want} "
                        f"requests together, and it selects {len(lengths)}: a smaller workload.concurrency fits")
