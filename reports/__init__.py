"""Presentation of results: tables, JSON and Markdown reports of proofs, compilations,
campaigns and benchmarks. Reports read the structured records other packages write; they never
scrape text output.
"""
