"""The balancer's pure part: the decision, starved elastic tenants getting whole cores
(balance), what the decision is given and its moves as JSON (balance_input), and the runtime
state with its file's JSON (balance_state)."""
