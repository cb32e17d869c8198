"""The port to the file system: forward-only inbox tails, watchers of project .nbs folders."""
