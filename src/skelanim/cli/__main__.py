from skelanim.cli import entry_point

entry_point()
