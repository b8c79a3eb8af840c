"""Chat messages to prompt text, rendered as llama-server renders them.

llama-server runs the model's own chat template: the Jinja text stored in the GGUF
(``tokenizer.chat_template``), rendered by a Jinja engine (``--jinja``, its default). The
template may add text of its own: SmolLM2's adds a default system prompt ("You are a
helpful AI assistant named SmolLM, trained by Hugging Face") when the first message is not
a system one. llama.cpp's ``llama_chat_apply_template`` only imitates a list of known
templates and leaves such details out, so labkit renders the template with Jinja2 too
(llama-cpp-python's ``Jinja2ChatFormatter``: trim_blocks, lstrip_blocks, ``raise_exception``,
``strftime_now``), with llama-server's rules around it:

- ``content`` given as OpenAI parts (``[{"type": "text", "text": ...}]``) reaches the
  template as one string, the parts joined with a newline;
- a conversation that ends with an assistant message is a *prefill*: the messages before it
  are rendered with the generation prompt, and the assistant's text (its parts joined with a
  blank line) is appended as it is, unclosed, for the model to continue (:func:`prefill`;
  llama-server's whole answer starts with it, its stream does not). Two assistant messages
  at the end are refused;
- ``bos_token`` and ``eos_token`` are the vocabulary's own texts, and when the tokenizer adds
  one of them itself, the rendered text does not repeat it;
- a request's ``tools`` reach the template as ``tools`` (when there are any), each as
  ``{"type": "function", "function": {"name", "description", "parameters"}}``; the template
  decides what of them the prompt shows (SmolLM2's shows nothing). :attr:`ChatTemplate.uses_tools`
  says whether it reads them at all.
"""

from __future__ import annotations

from .request import BadRequest


class ChatTemplate:
    """A model's chat template, ready to render conversations.

    ``template`` is the Jinja text; ``bos_token`` / ``eos_token`` the texts of the
    vocabulary's BOS and EOS tokens ('' if it has none); ``add_bos`` / ``add_eos`` whether the
    tokenizer adds them to every prompt.
    """

    def __init__(self, template: str, bos_token: str = "", eos_token: str = "",
                 add_bos: bool = False, add_eos: bool = False):
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        self.template = template
        self.bos_token, self.eos_token = bos_token, eos_token
        self.add_bos, self.add_eos = add_bos, add_eos
        self._formatters = {flag: Jinja2ChatFormatter(template, eos_token, bos_token,
                                                      add_generation_prompt=flag)
                            for flag in (True, False)}

    @property
    def uses_tools(self) -> bool:
        """Whether the template reads ``tools`` (renders them into the prompt)."""
        import jinja2
        import jinja2.meta
        env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])
        try:
            return "tools" in jinja2.meta.find_undeclared_variables(env.parse(self.template))
        except jinja2.TemplateSyntaxError:
            return "tools" in self.template

    def render(self, messages: list[dict], add_generation_prompt: bool = True,
               tools: list[dict] | None = None) -> str:
        """The prompt text for ``messages`` (dicts with ``role`` and ``content``, a string or
        a list of text parts, and the template's other fields such as ``tool_calls``), with
        ``tools`` handed to the template. Raises :class:`BadRequest` for two assistant messages
        at the end, or when the template itself refuses the conversation."""
        messages = list(messages)
        start = prefill(messages)
        if messages and messages[-1].get("role") == "assistant":
            messages.pop()
            if messages and messages[-1].get("role") == "assistant":
                raise BadRequest("Cannot have 2 or more assistant messages at the end of the list.")
            add_generation_prompt = True
        plain = [{**m, "content": _text(m.get("content"), "\n")} for m in messages]
        try:
            text = self._formatters[add_generation_prompt](messages=plain,
                                                           tools=tools or None).prompt
        except ValueError as exc:   # the template's raise_exception: it refuses the conversation
            raise BadRequest(str(exc)) from None
        if self.add_bos and self.bos_token and text.startswith(self.bos_token):
            text = text[len(self.bos_token):]
        if self.add_eos and self.eos_token and text.endswith(self.eos_token):
            text = text[:-len(self.eos_token)]
        return text + start


def prefill(messages: list[dict]) -> str:
    """The text of a closing assistant message, which the answer continues ('' if none)."""
    if messages and messages[-1].get("role") == "assistant":
        return _text(messages[-1].get("content"), "\n\n")
    return ""


def _text(content, joiner: str) -> str:
    """A message's content as one string: OpenAI text parts joined with ``joiner``."""
    if isinstance(content, list):
        return joiner.join(part["text"] for part in content)
    return "" if content is None else content
