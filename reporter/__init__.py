"""imagebench's reporter: loads recorded runs, computes statistics, renders the site."""
