/*
 * owner.h — which shared object defines the malloc this process calls. Shared by npbench and
 * the probe library. The global lookup of "malloc" is the first definition in the process's
 * search order (executable, LD_PRELOAD libraries, then the needed libraries), which is what
 * every call binds to. One trap: a non-PIE executable that takes malloc's address (Debian's
 * python3) carries an undefined "malloc" with the address of its own PLT stub, and the global
 * lookup returns that stub. So when the lookup lands in the executable on something that is not
 * a real definition of malloc, we walk the link map (search order) to the first object that
 * defines malloc itself. Allocates nothing; returns a string owned by the dynamic linker.
 */
#ifndef NPBENCH_OWNER_H
#define NPBENCH_OWNER_H

#include <dlfcn.h>
#include <link.h>
#include <string.h>

static inline const char *npbench_malloc_owner(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info info;
	struct link_map *where = NULL;
	const ElfW(Sym) *entry = NULL;
	if (!sym || !dladdr1(sym, &info, (void **)&where, RTLD_DL_LINKMAP) || !info.dli_fname)
		return "unknown";
	/* The executable's link map entry is the head of the list. There, dladdr matches even an
	 * undefined symbol that has a value (the PLT stub); its section index tells them apart. */
	int in_exe = where && !where->l_prev;
	if (!in_exe || !dladdr1(sym, &info, (void **)&entry, RTLD_DL_SYMENT) ||
	    (entry && entry->st_shndx != SHN_UNDEF))
		return info.dli_fname;
	for (struct link_map *l = where->l_next; l; l = l->l_next) {
		if (!l->l_name || !l->l_name[0])
			continue;
		void *h = dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		/* dlsym on a handle looks in that object first, then its dependencies. */
		void *s = dlsym(h, "malloc");
		Dl_info d;
		int here = s && dladdr(s, &d) && d.dli_fname && !strcmp(d.dli_fname, l->l_name);
		dlclose(h);
		if (here)
			return l->l_name;
	}
	return info.dli_fname;
}

#endif
