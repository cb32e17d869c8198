"""The pure core: screen model, detection, sidecar logic, control plane. Imports no UI, no tmux."""
