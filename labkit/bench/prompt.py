"""The extraction prompt: a system instruction plus one worked example.

The prompt is data, kept in ``data/prompt.json`` next to the documents it is used with,
so a notebook and ``labkit bench`` send exactly the same messages. For one document the
chat is::

    system     <preamble, if the workload has one> + instruction
    user       the example document
    assistant  the example answer (one JSON object)
    user       the document to extract

Plain prompting, no grammar: ``response_format`` stays unset by default, and the answer
is graded exactly as the model wrote it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..machine.atomic import write_atomic

FIELDS = ("id", "owner", "deadline")

SYSTEM = ("You extract fields from a document. Reply with one JSON object with exactly these "
          "keys: id, owner, deadline. Copy each value exactly as written in the document.")
EXAMPLE_DOCUMENT = ("Please finish the office move before the deadline.\n"
                    "id: DEMO-00\nowner: Kim\ndeadline: 2026-11-20\nThank you.")
EXAMPLE_ANSWER = {"id": "DEMO-00", "owner": "Kim", "deadline": "2026-11-20"}


@dataclass
class Prompt:
    system: str = SYSTEM
    example_document: str = EXAMPLE_DOCUMENT
    example_answer: dict | None = field(default_factory=lambda: dict(EXAMPLE_ANSWER))
    max_tokens: int = 64
    response_format: dict | None = None   # e.g. {"type": "json_schema", ...}; unused by default

    @classmethod
    def default(cls) -> "Prompt":
        return cls()

    @classmethod
    def load(cls, path: str | Path) -> "Prompt":
        return cls(**json.loads(Path(path).read_text()))

    def save(self, path: str | Path) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n")

    def messages(self, document: str, preamble: str = "") -> list[dict]:
        system = f"{preamble}\n\n{self.system}" if preamble else self.system
        example = [] if self.example_answer is None else [   # no answer: no worked example
            {"role": "user", "content": self.example_document},
            # characters as written: a Chinese answer as characters, not \u escapes
            {"role": "assistant", "content": json.dumps(self.example_answer, ensure_ascii=False)}]
        return [{"role": "system", "content": system}, *example,
                {"role": "user", "content": document}]

    def warmup_messages(self) -> list[dict]:
        """The unscored warm-up request: the worked example itself."""
        return self.messages(self.example_document)


def json_schema_format() -> dict:
    """A ``response_format`` that constrains the answer to the three string fields
    (llama.cpp's grammar sampler). Not used by the default workloads."""
    schema = {"type": "object", "additionalProperties": False, "required": list(FIELDS),
              "properties": {f: {"type": "string"} for f in FIELDS}}
    return {"type": "json_schema", "json_schema": {"name": "fields", "schema": schema}}
