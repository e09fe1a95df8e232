"""One comparison computed into ``ArticleData``: the published comparisons, their rows, confounders and page addresses."""
