"""Modal screens: each asks for one decision and returns it with `dismiss()`."""
