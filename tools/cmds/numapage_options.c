/* numapage options — lists every NUMAPAGE_* environment variable with its default. */
#include <stdio.h>

#include "../cmds.h"
#include "options.h"

int np_cmd_options(int argc, char **argv)
{
	(void)argc, (void)argv;
	for (const struct np_option_doc *d = np_options_table(); d->name; d++)
		printf("NUMAPAGE_%-18s default %-26s %s\n", d->name, d->deflt, d->doc);
	return 0;
}
