"""What an agent changed, as a review sees it: pure. `unified_diff` reads git's diff of one file
into hunks and numbered lines; `review_comments` keeps the operator's comments and writes the one
prompt that sends them back to the agent; `review_rules` says when merge, discard and sending
are allowed."""
