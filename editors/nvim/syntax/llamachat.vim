" The llama-lsp chat is Markdown.
if exists("b:current_syntax")
  finish
endif
runtime! syntax/markdown.vim
unlet! b:current_syntax
let b:current_syntax = "llamachat"
