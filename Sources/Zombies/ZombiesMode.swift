import Shell
