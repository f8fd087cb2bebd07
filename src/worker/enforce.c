/* PLACEHOLDER: not yet written */
