"""Prompts for a load point: random token ids of exact lengths, a ShareGPT file, or a prompts file.

Random prompts are lists of token ids drawn from the served model's vocabulary (special tokens
excluded) and sent as the completions `prompt` (the OpenAI API accepts token arrays; vLLM uses them
as they are, adding no BOS), so the prompt length the server sees is exactly prefix_len + input_len.
The vocabulary comes from the model's tokenizer (transformers AutoTokenizer on a local folder), or,
when that is not available here, from the server's own /tokenize endpoint (vLLM) applied to a fixed
text. A server with neither gets text prompts; their real lengths are then read from `usage`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from vllmkit.errors import UsageError
from vllmkit.files import FileProblem, read_text

# a dataset or prompts file: ShareGPT_V3_unfiltered_cleaned_split.json is ~640 MiB
MAX_INPUT_BYTES = 2 << 30


def read_json_file(path: Path, label: str, hint: str) -> Any:
    """A user's JSON file (`label` names the flag in messages, e.g. "--dataset "): unreadable or not
    JSON is a usage error (exit 2) with `hint`."""
    try:
        return json.loads(read_text(path, max_bytes=MAX_INPUT_BYTES))
    except FileProblem as exc:
        raise UsageError(exc.describe(label), hint if exc.kind == "not-text" else "check the path") from None
    except ValueError as exc:
        raise UsageError(f"{label}{path} is not JSON: {exc}", hint) from None


class Prompt(BaseModel):
    prompt: list[int] | str
    input_len: int | None = None  # exact, when known before sending
    output_len: int


# A fixed, varied English text: tokenized by the server when no tokenizer is available here, to
# collect valid token ids.
_HARVEST_TEXT = (
    "The quick brown fox jumps over the lazy dog while seven wizards quietly hex jovial bankers. "
    "Measurements of throughput and latency depend on batch size, sequence length, memory bandwidth "
    "and the scheduler; numbers 0 1 2 3 4 5 6 7 8 9 10 42 100 2024, symbols ( ) [ ] { } < > = + - * / "
    "and words such as river, mountain, engine, token, cache, kernel, matrix, vector, prompt, answer, "
    "summer, winter, garden, library, history, science, music, language, ocean, planet, station."
)


def vocabulary_from_tokenizer(tokenizer: Any) -> list[int]:
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    size = len(tokenizer)
    ids = [i for i in range(size) if i not in special]
    if not ids:
        raise UsageError("the tokenizer has no ordinary tokens", "pass another --tokenizer")
    return ids


def load_tokenizer(path: str) -> Any | None:
    """transformers AutoTokenizer from a local folder; None when transformers or the files are missing."""
    folder = Path(path).expanduser()
    if not (folder / "tokenizer_config.json").is_file() and not (folder / "tokenizer.json").is_file():
        return None
    try:
        from transformers import AutoTokenizer  # optional: comes with vLLM
    except ImportError:
        return None
    try:
        return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    except Exception:  # a broken tokenizer folder: fall back to the server's /tokenize
        return None


def harvest_ids(token_lists: Sequence[Sequence[int]], special: set[int] | None = None) -> list[int]:
    ids = sorted({t for tokens in token_lists for t in tokens if t not in (special or set())})
    return ids


def random_prompts(
    vocab: Sequence[int],
    count: int,
    *,
    input_len: int,
    output_len: int,
    prefix_len: int = 0,
    seed: int = 0,
) -> list[Prompt]:
    """`count` prompts of exactly prefix_len + input_len token ids (a shared prefix, as vLLM's
    --random-prefix-len, then a random part that differs per prompt)."""
    if not vocab:
        raise UsageError("no token ids to build prompts from", "pass --tokenizer FOLDER")
    rng = random.Random(seed)
    prefix = [rng.choice(vocab) for _ in range(prefix_len)]
    out: list[Prompt] = []
    for _ in range(count):
        ids = prefix + [rng.choice(vocab) for _ in range(input_len)]
        out.append(Prompt(prompt=ids, input_len=len(ids), output_len=output_len))
    return out


def text_prompts(count: int, *, input_len: int, output_len: int, prefix_len: int = 0, seed: int = 0) -> list[Prompt]:
    """No tokenizer anywhere: words that most tokenizers split into about one token each; the real
    length is read from the server's usage."""
    rng = random.Random(seed)
    words = _HARVEST_TEXT.lower().replace(",", " ").replace(".", " ").split()
    prefix = " ".join(rng.choice(words) for _ in range(prefix_len))
    out = []
    for _ in range(count):
        body = " ".join(rng.choice(words) for _ in range(input_len))
        out.append(Prompt(prompt=(prefix + " " + body).strip(), output_len=output_len))
    return out


def _conversation_turns(item: Any) -> list[str]:
    convs = item.get("conversations") or item.get("conversation") if isinstance(item, dict) else None
    if not isinstance(convs, list):
        return []
    turns = []
    for turn in convs:
        if isinstance(turn, dict):
            value = turn.get("value", turn.get("content"))
            if isinstance(value, str):
                turns.append(value)
    return turns


def sharegpt_prompts(
    path: Path,
    count: int,
    *,
    output_len: int | None,
    count_tokens: Any | None,
    seed: int = 0,
) -> list[Prompt]:
    """ShareGPT JSON: [{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}].
    Like vLLM's ShareGPT sampler: the first turn is the prompt; the output length is --output-len,
    else the token length of the second turn (needs a tokenizer: `count_tokens(text) -> int`)."""
    doc = read_json_file(path, "--dataset ", "give a ShareGPT-format JSON file")
    if not isinstance(doc, list):
        raise UsageError(f"--dataset {path} is not a JSON list", "give a ShareGPT-format JSON file")
    pairs = [t for t in (_conversation_turns(item) for item in doc) if len(t) >= 2 and t[0].strip()]
    if not pairs:
        raise UsageError(f"--dataset {path} has no conversation with two turns",
                         "ShareGPT items look like {\"conversations\": [{\"from\": \"human\", \"value\": ...}, ...]}")
    if output_len is None and count_tokens is None:
        raise UsageError("a ShareGPT workload needs --output-len when no tokenizer is available",
                         "pass --output-len N or --tokenizer FOLDER")
    rng = random.Random(seed)
    rng.shuffle(pairs)
    out: list[Prompt] = []
    for i in range(count):
        first, second = pairs[i % len(pairs)][:2]
        n_out = output_len if output_len is not None else max(int(count_tokens(second)), 1)
        n_in = int(count_tokens(first)) if count_tokens is not None else None
        out.append(Prompt(prompt=first, input_len=n_in, output_len=n_out))
    return out


def file_prompts(path: Path, count: int, *, output_len: int, seed: int = 0) -> list[Prompt]:
    """One prompt per line (.txt), or JSON lines with {"prompt": ..., "output_len": N (optional)}."""
    try:
        lines = [ln for ln in read_text(path, max_bytes=MAX_INPUT_BYTES).splitlines() if ln.strip()]
    except FileProblem as exc:
        raise UsageError(exc.describe("--prompts "), "check the path") from None
    items: list[Prompt] = []
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                raise UsageError(f"--prompts {path}: line {number} is not JSON", "one JSON object per line") from None
            text = obj.get("prompt") if isinstance(obj, dict) else None
            if not isinstance(text, str) or not text:
                raise UsageError(f"--prompts {path}: line {number} has no \"prompt\" string", "e.g. {\"prompt\": \"...\"}")
            n_out = obj.get("output_len", output_len)
            items.append(Prompt(prompt=text, output_len=int(n_out)))
        else:
            items.append(Prompt(prompt=line, output_len=output_len))
    if not items:
        raise UsageError(f"--prompts {path} is empty", "one prompt per line")
    rng = random.Random(seed)
    order = list(range(len(items)))
    rng.shuffle(order)
    return [items[order[i % len(items)]] for i in range(count)]
