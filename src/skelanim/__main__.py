from skelanim.console import entry_point

entry_point()
