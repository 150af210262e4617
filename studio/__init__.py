"""Jianmu Studio: a Textual debugger for behaviour-tree LLM agents."""
