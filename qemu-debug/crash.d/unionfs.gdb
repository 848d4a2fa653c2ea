# unionfs walkers for crash's embedded gdb (no Python there): loaded by qemu-debug/crash with
# `gdb source qemu-debug/crash.d/unionfs.gdb` after `mod -s unionfs src/unionfs.ko`.
# Offsets come from the debug info (&((T *)0)->member), never from numbers written here.
#   unionfs_mounts            every union sb: mount point name, sbi, generation, branches
#   unionfs_fanout DENTRY     bstart/bend/bopaque/bwh/generation + each branch's lower dentry,
#                             marking a link group's index entry and a redirected lower dir
#   unionfs_copyups           in-flight copy-ups: ".wh..wh.unionfs.*" temporaries in the
#                             dcache of every writable branch root of every union
define unionfs_mounts
  set $h = &super_blocks
  set $p = super_blocks.next
  while $p != $h
    set $sb = (struct super_block *)((char *)$p - (unsigned long)&((struct super_block *)0)->s_list)
    if $sb->s_type == &unionfs_fs_type
      set $sbi = (struct unionfs_sb_info *)$sb->s_fs_info
      set $bt = $sbi->bt
      printf "union sb 0x%lx  sbi 0x%lx  generation %d  btable 0x%lx (gen %d)  branches %d  root dentry 0x%lx\n", $sb, $sbi, $sbi->generation.counter, $bt, $bt->gen, $bt->nbr, $sb->s_root
      set $mh = &$sb->s_mounts
      set $m = $sb->s_mounts.next
      while $m != $mh
        set $mnt = (struct mount *)((char *)$m - (unsigned long)&((struct mount *)0)->mnt_instance)
        printf "  mount 0x%lx  mounted on \"%s\" (parent mount 0x%lx)\n", $mnt, $mnt->mnt_mountpoint->d_name.name, $mnt->mnt_parent
        set $m = $m->next
      end
      set $i = 0
      while $i < $bt->nbr
        set $br = $bt->br[$i]
        printf "  branch %d: %-24s r%c  id %d  open files %d  lower sb 0x%lx (%s)  root dentry 0x%lx\n", $i, $br->name, $br->mode == 1 ? 'w' : 'o', $br->id, $br->open_files.counter, $br->path.mnt->mnt_sb, $br->path.mnt->mnt_sb->s_type->name, $br->path.dentry
        set $i = $i + 1
      end
    end
    set $p = $p->next
  end
end
document unionfs_mounts
Every unionfs superblock with its mounts and branches.
end

define unionfs_fanout
  set $d = (struct dentry *)$arg0
  set $ud = (struct unionfs_dentry_info *)$d->d_fsdata
  set $sbi = (struct unionfs_sb_info *)$d->d_sb->s_fs_info
  printf "dentry 0x%lx \"%s\" (parent \"%s\")  inode 0x%lx\n", $d, $d->d_name.name, $d->d_parent->d_name.name, $d->d_inode
  printf "  bstart %d  bend %d  bopaque %d  bwh %d  generation %d (sb %d)  btable 0x%lx\n", $ud->bstart, $ud->bend, $ud->bopaque, $ud->bwh, $ud->generation, $sbi->generation.counter, $ud->bt
  set $i = 0
  while $i < $ud->nbr
    set $br = $ud->bt->br[$i]
    set $ld = $ud->lower[$i]
    if $ld
      if $ld->d_inode
        printf "  [%d] r%c %-20s dentry 0x%lx \"%s\" ino %lu mode %o", $i, $br->mode == 1 ? 'w' : 'o', $br->name, $ld, $ld->d_name.name, $ld->d_inode->i_ino, $ld->d_inode->i_mode
      else
        printf "  [%d] r%c %-20s dentry 0x%lx \"%s\" NEGATIVE", $i, $br->mode == 1 ? 'w' : 'o', $br->name, $ld, $ld->d_name.name
      end
      # docs/concepts.md "Hard links": the group's entry in ".wh..wh.unionfs.index" (21 chars)
      set $uf_pn = $ld->d_parent->d_name
      if $uf_pn.len == 21 && $uf_pn.name[0] == '.' && $uf_pn.name[8] == 'u' && $uf_pn.name[15] == '.' && $uf_pn.name[16] == 'i' && $uf_pn.name[20] == 'x'
        printf "  link group: the index entry"
      else
        # docs/concepts.md "Directory rename": a lower dir not under the parent's (redirect)
        set $uf_pud = (struct unionfs_dentry_info *)$d->d_parent->d_fsdata
        if $d != $d->d_parent && $i != $ud->bstart && $uf_pud && $i < $uf_pud->nbr && $uf_pud->lower[$i] && $uf_pud->lower[$i] != $ld->d_parent
          printf "  redirect: not under the parent's branch dir"
        end
      end
      printf "\n"
    else
      if $i == $ud->bwh
        printf "  [%d] r%c %-20s WHITEOUT\n", $i, $br->mode == 1 ? 'w' : 'o', $br->name
      else
        printf "  [%d] r%c %-20s -\n", $i, $br->mode == 1 ? 'w' : 'o', $br->name
      end
    end
    set $i = $i + 1
  end
end
document unionfs_fanout
unionfs_fanout DENTRY: the branch fan-out of a union dentry.
end

define unionfs_copyups
  set $h = &super_blocks
  set $p = super_blocks.next
  while $p != $h
    set $sb = (struct super_block *)((char *)$p - (unsigned long)&((struct super_block *)0)->s_list)
    if $sb->s_type == &unionfs_fs_type
      set $bt = ((struct unionfs_sb_info *)$sb->s_fs_info)->bt
      printf "union sb 0x%lx: copy-up temporaries in the branch roots (cu_lock holders: see bt of the tasks)\n", $sb
      set $i = 0
      while $i < $bt->nbr
        set $br = $bt->br[$i]
        if $br->mode == 1
          printf "  branch %d %s\n", $i, $br->name
          set $pdir = $br->path.dentry
          set $lhead = &$pdir->d_subdirs
          set $lnode = $pdir->d_subdirs.next
          while $lnode != $lhead
            set $cdent = (struct dentry *)((char *)$lnode - (unsigned long)&((struct dentry *)0)->d_child)
            set $nm = (char *)$cdent->d_name.name
            if $nm[0] == 46 && $nm[1] == 119 && $nm[2] == 104 && $nm[3] == 46 && $nm[4] == 46 && $nm[5] == 119 && $nm[6] == 104 && $nm[7] == 46 && $nm[8] == 117 && $nm[9] == 110
              if $cdent->d_inode
                printf "    in-flight copy-up temporary \"%s\" in \"%s\": dentry 0x%lx ino %lu size %lld\n", $nm, $pdir->d_name.name, $cdent, $cdent->d_inode->i_ino, $cdent->d_inode->i_size
              else
                printf "    (negative) \"%s\" in \"%s\": dentry 0x%lx\n", $nm, $pdir->d_name.name, $cdent
              end
            end
            set $lnode = $lnode->next
          end
        end
        set $i = $i + 1
      end
    end
    set $p = $p->next
  end
end
document unionfs_copyups
In-flight copy-ups: temporaries ".wh..wh.unionfs.N" in the root of each writable branch.
end

define unionfs_fanout_all
  set $uf_h = &super_blocks
  set $uf_p = super_blocks.next
  while $uf_p != $uf_h
    set $uf_sb = (struct super_block *)((char *)$uf_p - (unsigned long)&((struct super_block *)0)->s_list)
    if $uf_sb->s_type == &unionfs_fs_type
      printf "union sb 0x%lx: root and its cached children\n", $uf_sb
      unionfs_fanout $uf_sb->s_root
      set $uf_kh = &$uf_sb->s_root->d_subdirs
      set $uf_k = $uf_sb->s_root->d_subdirs.next
      while $uf_k != $uf_kh
        set $uf_kd = (struct dentry *)((char *)$uf_k - (unsigned long)&((struct dentry *)0)->d_child)
        if $uf_kd->d_fsdata
          unionfs_fanout $uf_kd
        end
        set $uf_k = $uf_k->next
      end
    end
    set $uf_p = $uf_p->next
  end
end
document unionfs_fanout_all
Fan-out of every union's root dentry and of its cached children.
end
