"""perftest across the fabric in three layers: which NICs test against which (rounds), how a pair's
bandwidth is judged (physics floor, outliers against peers, stored baseline), and how a slow pair is
traced to its host, its NIC or the link between them (localisation).

Planning, judging and localising are pure; `runner` is the only module that reaches hosts.
"""
