"""Jianmu runtime: behaviour-tree LLM agents on py_trees, driven by an event-driven runner."""
