"""The fleet as values: panes, states and detections (`model`), hosts, the fleet's memory and
restore plan, new agents, the pane state, the needs-you queue, problems, filters, background
sessions and process trees."""
