"""KV-cache accounting, mirroring vLLM's v1 KV cache manager (vllm 0.32/0.33).

Sources (read from the installed wheel, vllm/v1/kv_cache_interface.py and
vllm/v1/core/kv_cache_utils.py, 0.32.0):
- page = block_size * num_kv_heads * (head_size + head_size_v) * dtype_bytes (AttentionSpec);
  MLA stores one latent per token: head_size = kv_lora_rank + qk_rope_head_dim, head_size_v = 0.
- per-request memory: full/MLA cdiv(L, bs) * page; sliding window (cdiv(min(W-1+F, L), bs) + 1) * page;
  chunked local cdiv(min(C+F, L), bs) * page; mamba page * (1 + spec) or page * (2 + spec + ckpt) in
  "align" mode; F = max_concurrent_batches * max_num_batched_tokens ("max_in_flight_tokens").
- grouping: identical specs -> one group; one spec type -> one group (UniformTypeKVCacheSpecs);
  hybrid -> unify page sizes (scale block size, pad mamba), bucket identical specs, group size = min
  bucket size (or max when max < 1.5 * min), split layers[i::num_groups].
- bytes_per_block = max over groups of the sum of the pages of its layers;
  num_blocks = available // bytes_per_block (min over workers);
  needed = bytes_per_block * sum over groups of pages per request; the check reserves one block (the
  null block): needed <= available - bytes_per_block, else "estimated maximum model length" by
  binary search; max_concurrency = num_blocks / pages per request; tokens = int(concurrency * L).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from pydantic import BaseModel


def cdiv(a: int, b: int) -> int:
    return -(a // -b)


class SpecKind(str, Enum):
    FULL = "full"
    MLA = "mla"
    SLIDING = "sliding"
    CHUNKED = "chunked"
    MAMBA = "mamba"


@dataclass(frozen=True)
class LayerSpec:
    """One layer's KV cache spec on one rank (what vLLM's get_kv_cache_spec returns)."""

    kind: SpecKind
    block_size: int
    # bytes one token occupies in this layer (attention); 0 for mamba
    token_bytes: int = 0
    # mamba: state bytes per request (block-size independent)
    state_bytes: int = 0
    sliding_window: int | None = None
    chunk_size: int | None = None
    page_size_padded: int | None = None
    # mamba: pages held per request (1 + spec in "none" mode, 2 + spec + ckpt in "align" mode)
    mamba_pages: int = 1

    @property
    def unpadded_page_bytes(self) -> int:
        if self.kind is SpecKind.MAMBA:
            return self.state_bytes
        return self.block_size * self.token_bytes

    @property
    def page_bytes(self) -> int:
        if self.page_size_padded is not None:
            return self.page_size_padded
        return self.unpadded_page_bytes

    def max_memory_bytes(self, max_model_len: int, in_flight_tokens: int) -> int:
        """vLLM's KVCacheSpec.max_memory_usage_bytes for one request at max_model_len."""
        page = self.page_bytes
        if self.kind in (SpecKind.FULL, SpecKind.MLA):
            return cdiv(max_model_len, self.block_size) * page
        if self.kind is SpecKind.SLIDING:
            assert self.sliding_window is not None
            tokens = min(self.sliding_window - 1 + in_flight_tokens, max_model_len)
            return (cdiv(tokens, self.block_size) + 1) * page
        if self.kind is SpecKind.CHUNKED:
            assert self.chunk_size is not None
            tokens = min(self.chunk_size + in_flight_tokens, max_model_len)
            return cdiv(tokens, self.block_size) * page
        return page * self.mamba_pages

    def pages_per_request(self, max_model_len: int, in_flight_tokens: int) -> int:
        return cdiv(self.max_memory_bytes(max_model_len, in_flight_tokens), self.page_bytes)

    def type_key(self) -> tuple[object, ...]:
        """Layers with the same key need the same number of token slots
        (vLLM's UniformTypeKVCacheSpecs.is_uniform_type)."""
        if self.kind is SpecKind.SLIDING:
            return (self.kind, self.block_size, self.sliding_window)
        if self.kind is SpecKind.CHUNKED:
            return (self.kind, self.block_size, self.chunk_size)
        if self.kind is SpecKind.MAMBA:
            return (self.kind, self.block_size, self.page_bytes, self.mamba_pages)
        return (self.kind, self.block_size)


@dataclass(frozen=True)
class KVGroup:
    layers: tuple[int, ...]  # indices into the model-wide layer list (KV layers only)
    specs: tuple[LayerSpec, ...]  # one per layer in `layers`
    # a group projected onto a PP stage that holds none of its layers keeps its spec for the
    # per-request page count (vLLM keeps the group's kv_cache_spec), but owns no memory
    empty_spec: LayerSpec | None = None

    @property
    def kind(self) -> SpecKind:
        return (self.specs[0] if self.specs else self.empty_spec).kind  # type: ignore[union-attr]

    # Computed once per group: the fit search asks for these at every step, and a group holds one
    # spec per layer (thousands for a hostile config), mostly identical.
    @functools.cached_property
    def _page_bytes_sum(self) -> int:
        return sum(s.page_bytes for s in self.specs)

    @functools.cached_property
    def _distinct_specs(self) -> tuple[LayerSpec, ...]:
        specs = self.specs or ((self.empty_spec,) if self.empty_spec else ())
        return tuple(dict.fromkeys(specs))

    def page_bytes_sum(self) -> int:
        return self._page_bytes_sum

    def pages_per_request(self, max_model_len: int, in_flight_tokens: int) -> int:
        return max((s.pages_per_request(max_model_len, in_flight_tokens) for s in self._distinct_specs), default=0)


def unify_page_sizes(specs: Sequence[LayerSpec]) -> list[LayerSpec]:
    """vLLM unify_kv_cache_spec_page_size: scale the block size of smaller attention pages to
    the largest page; pad mamba pages (and attention pages that do not divide it)."""
    page_sizes = {s.page_bytes for s in specs}
    if len(page_sizes) <= 1:
        return list(specs)
    max_page = max(page_sizes)
    out: list[LayerSpec] = []
    for s in specs:
        if s.page_bytes == max_page:
            out.append(s)
        elif s.kind is SpecKind.MAMBA:
            out.append(replace(s, page_size_padded=max_page))
        elif max_page % s.page_bytes == 0:
            out.append(replace(s, block_size=s.block_size * (max_page // s.page_bytes)))
        elif s.kind is not SpecKind.MLA:
            out.append(replace(s, page_size_padded=max_page))
        else:
            raise ValueError("MLA page size cannot be unified with the other layers' pages")
    return out


def group_layers(specs: Sequence[LayerSpec]) -> list[KVGroup]:
    """vLLM get_kv_cache_groups for the layer-outer layout (no packed groups)."""
    if not specs:
        return []
    indices = tuple(range(len(specs)))
    if len(set(specs)) == 1:
        return [KVGroup(indices, tuple(specs))]
    if len({s.type_key() for s in specs}) == 1:
        return [KVGroup(indices, tuple(specs))]
    unified = unify_page_sizes(specs)
    buckets: dict[LayerSpec, list[int]] = {}
    for i, s in enumerate(unified):
        buckets.setdefault(s, []).append(i)
    sizes = [len(v) for v in buckets.values()]
    group_size = min(sizes)
    if max(sizes) < min(sizes) * 1.5:
        group_size = max(sizes)
    groups: list[KVGroup] = []
    for layer_ids in buckets.values():
        num_groups = cdiv(len(layer_ids), group_size)
        for i in range(num_groups):
            ids = tuple(layer_ids[i::num_groups])
            groups.append(KVGroup(ids, tuple(unified[j] for j in ids)))
    return groups


def project_groups(groups: Sequence[KVGroup], layers_on_worker: set[int]) -> list[KVGroup]:
    """vLLM _project_kv_cache_groups_to_worker: keep only this PP stage's layers."""
    out = []
    for g in groups:
        keep = [(i, s) for i, s in zip(g.layers, g.specs, strict=True) if i in layers_on_worker]
        if keep:
            out.append(KVGroup(tuple(i for i, _ in keep), tuple(s for _, s in keep)))
        else:
            out.append(KVGroup((), (), empty_spec=max(g.specs, key=lambda s: s.page_bytes)))
    return out


def bytes_per_block(groups: Sequence[KVGroup]) -> int:
    return max((g.page_bytes_sum() for g in groups), default=0)


def pages_per_request(groups: Sequence[KVGroup], max_model_len: int, in_flight_tokens: int) -> int:
    return sum(g.pages_per_request(max_model_len, in_flight_tokens) for g in groups)


def mixes_layer_kinds(groups: Sequence[KVGroup]) -> bool:
    """More than one kind of layer shares the block pool (sliding-window, chunked-local or mamba beside full
    attention): what a running request holds then differs from vLLM's start-up charge (running_pool_tokens)."""
    return len({s.kind for g in groups for s in g.specs}) > 1


def running_pool_tokens(groups: Sequence[KVGroup], num_blocks: int, length: int, in_flight_tokens: int) -> int | None:
    """Tokens of context the block pool holds for running requests of `length` tokens each, or None when a request
    holds no pages. vLLM's start-up charge (pages_per_request) gives every sliding-window / chunked-local group the
    window plus all the tokens in flight; a running request holds less: before each step's allocation the scheduler
    frees what its window has left behind (KVCacheManager.allocate_slots -> remove_skipped_blocks, 0.19 - 0.32), so
    a decoding request (one token in flight) holds its window's pages there. Admitting the next request needs the
    pages one step's tokens add to those groups free, once (allocate_slots full_sequence_must_fit): held back from
    the pool. Full attention, MLA and mamba state cost the same either way."""
    c = max(int(length), 1)
    held = pages_per_request(groups, c, 1)
    if not held:
        return None
    step = min(in_flight_tokens, c)
    headroom = pages_per_request(groups, step, step) - pages_per_request(groups, step, 1)
    return max(int(max(num_blocks - headroom, 0) * c / held), 1)


def needed_bytes(groups: Sequence[KVGroup], max_model_len: int, in_flight_tokens: int) -> int:
    """vLLM _max_memory_usage_bytes_from_groups: one request at max_model_len."""
    return bytes_per_block(groups) * pages_per_request(groups, max_model_len, in_flight_tokens)


def estimate_max_model_len(
    groups: Sequence[KVGroup], check_memory: int, upper: int, in_flight_tokens: int
) -> int:
    """vLLM _estimate_max_model_len_from_groups: binary search in [1, upper]; 0 if nothing fits."""

    def fits(length: int) -> bool:
        return needed_bytes(groups, length, in_flight_tokens) <= check_memory

    if not fits(1):
        return 0
    lo, hi, best = 1, upper, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


class KVCapacity(BaseModel):
    bytes_per_block: int
    num_blocks: int
    pages_per_request: int
    max_model_len: int
    max_concurrency: float
    tokens: int
    needed_bytes: int  # one request at max_model_len
    fits: bool
    no_memory: bool = False  # "No available memory for the cache blocks"
    estimated_max_model_len: int | None = None  # vLLM's estimate when it does not fit (the first failing worker's)
    # the longest context every worker (PP stage) holds when it does not fit: 0 when one has no KV memory. vLLM
    # checks the workers in order and reports the first that fails, whose estimate a heavier stage may not hold
    usable_max_model_len: int | None = None
    auto_fit_max_model_len: int | None = None  # result of --max-model-len auto


def kv_capacity(
    groups: Sequence[KVGroup],
    worker_groups: Sequence[Sequence[KVGroup]],
    worker_available: Sequence[int],
    max_model_len: int,
    in_flight_tokens: int,
    *,
    auto_fit: bool = False,
    tokens_from_concurrency: bool = True,
    reserve_null_block: bool = True,
) -> KVCapacity:
    """Capacity as vLLM logs it, given the available KV bytes of every worker (PP stage).

    `groups` are the model-wide groups; `worker_groups[i]` their projection on worker i.
    """
    # vLLM >= 0.29 checks and auto-fits against the usable blocks: the null block BlockPool holds back is
    # reserved first (get_kv_cache_configs, check_enough_kv_cache_memory); earlier releases check the whole budget
    checks = [
        avail - bytes_per_block(wg) if reserve_null_block and any(g.specs for g in wg) else avail
        for wg, avail in zip(worker_groups, worker_available, strict=True)
    ]
    auto_len: int | None = None
    if auto_fit:
        fitted = [
            estimate_max_model_len(wg, chk, max_model_len, in_flight_tokens)
            for wg, chk in zip(worker_groups, checks, strict=True)
            if any(g.specs for g in wg)
        ]
        auto_len = min(fitted) if fitted else max_model_len
        if auto_len > 0:
            max_model_len = min(max_model_len, auto_len)

    fits = True
    no_memory = False
    estimated: int | None = None
    usable: int | None = None
    for wg, chk in zip(worker_groups, checks, strict=True):
        if not any(g.specs for g in wg):
            continue
        if chk <= 0:
            longest = 0
        elif needed_bytes(wg, max_model_len, in_flight_tokens) > chk:
            longest = estimate_max_model_len(wg, chk, max_model_len, in_flight_tokens)
        else:
            continue
        if fits:  # vLLM raises for the first failing worker (kv_cache_utils.get_kv_cache_configs)
            fits, no_memory, estimated = False, chk <= 0, longest
        usable = longest if usable is None else min(usable, longest)

    blocks = [
        (avail // bytes_per_block(wg) if bytes_per_block(wg) else 0, bytes_per_block(wg))
        for wg, avail in zip(worker_groups, worker_available, strict=True)
        if any(g.specs for g in wg)
    ]
    # the worker with the fewest blocks sets the count (stages of unequal layer counts differ)
    num_blocks, limiting_block_bytes = min(blocks) if blocks else (0, 0)
    num_blocks = max(num_blocks, 0)
    ppr = pages_per_request(groups, max_model_len, in_flight_tokens)
    concurrency = num_blocks / ppr if ppr else 0.0
    if tokens_from_concurrency:
        tokens = int(concurrency * max_model_len)  # vLLM >= 0.20.1 (_report_kv_cache_config, later get_kv_cache_capacity)
    else:
        # vLLM <= 0.20.0: num_blocks // num_groups * min block size
        min_block = min((g.specs[0].block_size for g in groups if g.specs), default=0)
        tokens = num_blocks // max(len(groups), 1) * min_block
    return KVCapacity(
        bytes_per_block=limiting_block_bytes,
        num_blocks=num_blocks,
        pages_per_request=ppr,
        max_model_len=max_model_len,
        max_concurrency=concurrency,
        tokens=tokens,
        needed_bytes=needed_bytes(worker_groups[0], max_model_len, in_flight_tokens) if worker_groups else 0,
        fits=fits,
        no_memory=no_memory,
        estimated_max_model_len=estimated,
        usable_max_model_len=usable,
        auto_fit_max_model_len=auto_len,
    )
