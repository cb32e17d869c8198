"""Reading Claude Code: a screen's state and menu, usage limits, the startup screens, the answer
card's menu, and one state fused from every source."""
