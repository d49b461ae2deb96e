"""The report's figures: matplotlib drawings of a sweep's sites (``plots``, ``depth``), the
group-level figures the claim kinds draw (``groups``), and ``FigureFile``, what a kind returns.

Only ``figure_file`` can be imported without matplotlib; the claim kinds import the others
inside their ``draw_figures``, so checking claims never loads matplotlib.
"""
