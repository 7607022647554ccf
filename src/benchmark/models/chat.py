"""Chat rendering shared by every language-model backend: the prompt as the model reads it."""

from __future__ import annotations


def prompt_text(cfg, messages: list[dict], apply_chat_template, templated: bool) -> str:
    """The prompt as the model reads it: the config's system prompt where the task gives none, then the chat
    template (`apply_chat_template(messages, add_generation_prompt=True)`) or, untemplated, the messages' texts."""
    if cfg.system_prompt and not any(m["role"] == "system" for m in messages):
        messages = [{"role": "system", "content": cfg.system_prompt}, *messages]
    if templated:
        return apply_chat_template(messages, add_generation_prompt=True)
    return "\n\n".join(m["content"] for m in messages) + "\n"
