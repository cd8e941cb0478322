namespace kdp {}
