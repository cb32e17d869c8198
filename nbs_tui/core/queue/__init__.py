"""The work queue, pure: its records (`records`), the tasks and states they fold into (`task_states`),
and which task goes next to which agent (`handout`). The store is `nbs_tui.files.queue_store`,
the holder's feeder `nbs_tui.sidecar.queue_feeder`, the commands `nbs_tui.fleet_api.queue_commands`;
the design, and the handing protocol that makes a SIGKILL hand no task twice, is docs/queue.md."""
