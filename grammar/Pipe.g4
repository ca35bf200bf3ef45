// The .pipe schedule language (see the README and DESIGN §2).
//
// A file holds one `schedule`: integer parameters, topology, placement of stages
// on (rank, chunk) slots, optional costs, and rank programs made of ops.
// Some alternatives below match common mistakes on purpose (marked "error
// production"): they parse, and the AST builder turns them into a targeted
// diagnostic instead of a generic syntax error.
grammar Pipe;

// A file may open with imports and definitions (`def`) and ends with its
// schedule. A file that is only imported holds nothing but imports and
// definitions: the parser reads those itself (syntax/Parser.cpp), not this rule.
file        : preamble* schedule EOF ;

preamble
  : IMPORT path=STRING ';'                                             # importItem
  | DEF name=ID '(' (params+=ID (',' params+=ID)*)? ')' '=' body=expr ';'  # exprDef
  | DEF name=ID '(' (params+=ID (',' params+=ID)*)? ')' block          # opsDef
  ;

schedule    : SCHEDULE name=ID '(' (param (',' param)* ','?)? ')' '{' decl* '}' ;
param       : name=ID '=' neg='-'? value=INT ;

decl
  : REQUIRE cond=expr (':' message=STRING)? ';'                        # requireDecl
  | kind=(RANKS | STAGES | MICROBATCHES) value=expr ';'                # topologyDecl
  | COPIES value=expr ';'                                              # copiesDecl
  | placement                                                          # placeDecl
  | FLOW name=ID ':' MICROBATCHES range '{' placement* '}'             # flowDecl
  | COSTS '{' costEntry* '}'                                           # costsDecl
  | letStmt                                                            # letDecl
  | RANK rankHead word=ID (limitWord=ID limit=expr)? '{' greedyEntry* '}' # greedyRankDecl
  | RANK rankHead block                                                # rankDecl
  | DOMAIN name=ID IN domainValues ';'                                 # domainDecl
  | SIZES var=ID '->' value=expr ';'                                   # sizesDecl
  | SIZES '{' items+=expr (',' items+=expr)* ','? '}' ';'              # sizesListDecl
  | SQUEEZE (limitWord=ID limit=expr)? ';'                             # squeezeDecl
  ;

// The values a parameter takes when a schedule family is checked: a half-open
// range or an explicit list (an empty list parses, to be reported by name).
domainValues
  : range (stepWord=ID step=expr)?                                     # rangeDomain
  | '{' (items+=expr (',' items+=expr)*)? '}'                          # listDomain
  ;

// A sub-rule of its own so that telling `rank r` from `rank 3` needs two tokens of
// lookahead, not a scan of the whole block.
rankHead
  : var=ID                                                             # genericRank
  | index=expr                                                         # explicitRank
  ;

// `rank r greedy limit E { I(1); F(0) if C; W; }`: list scheduling. The words
// `greedy` and `limit` are identifiers (checked by the AST builder), so no old
// file loses a name. Each idle rank runs the first entry whose op is ready.
greedyEntry : opCall (IF cond=expr)? ';' ;

placement   : PLACE STAGE var=ID '->' RANK rank=expr (CHUNK chunk=expr)? ';' ;
range       : lo=expr '..' hi=expr ;
costEntry   : name=ID ('[' stage=expr ']')? '=' value=costExpr ';' ;

// A cost is a number, or an expression over the schedule's parameters and lets
// that may use fractions (`B = 2.5 * v`, `F = P > 8 ? 1.5 : 1`).
costExpr
  : '(' inner=costExpr ')'                                             # costParen
  | number=(INT | FLOAT)                                               # costNumber
  | callee=ID '(' args+=costExpr (',' args+=costExpr)* ')'             # costCall
  | ID                                                                 # costName
  | '-' operand=costExpr                                               # costNeg
  | lhs=costExpr op=('*' | '/') rhs=costExpr                           # costBinary
  | lhs=costExpr op=('+' | '-') rhs=costExpr                           # costBinary
  | <assoc=right> cond=expr '?' then=costExpr ':' otherwise=costExpr   # costConditional
  ;

block       : '{' stmt* '}' ;

stmt
  : letStmt                                                            # letStatement
  | FOR var=ID IN range block                                          # forStatement
  | IF cond=expr then=block (ELSE (otherwise=block | elseIf=stmt))?    # ifStatement
  | opCall (joiners+=('&' | '&&') opCall)* ';'                         # opStatement
  | TABLE var=ID IN range '{' slotEntry* '}'                           # tableStatement
  ;

// A time table: for each slot of the range, the entries `at E:` whose E is that
// slot run in order; a slot no entry names runs the `fill:` entries.
slotEntry
  : word=ID at=expr ':' body=stmt                                      # slotAt
  | word=ID ':' body=stmt                                              # slotFill
  ;

letStmt     : LET name=ID '=' value=expr ';' ;

opCall      : name=ID ('(' opArgs? ')')? ;
opArgs
  : chunk=expr                                                         # chunkOnly
  | chunk=expr ',' MB '=' mb=expr                                      # chunkAndMb
  | MB '=' mb=expr                                                     # mbOnly
  | chunk=expr ',' MB '=' mb=expr ',' peerWord=ID '=' peer=expr        # chunkMbPeer     // Evict(c, mb = k, to = r)
  | MB '=' mb=expr ',' peerWord=ID '=' peer=expr                       # mbPeer
  | chunk=expr ',' peerWord=ID '=' peer=expr                           # chunkPeer       // error production: no mb
  | chunk=expr MB '=' mb=expr                                          # missingComma    // error production
  | chunk=expr ',' mb=expr                                             # positionalMb    // error production
  | args+=expr ',' args+=expr (',' args+=expr)+                        # manyArgs        // a def's call
  ;

expr
  : '(' inner=expr ')'                                                 # parenExpr
  | callee=ID '(' args+=expr (',' args+=expr)* ')'                     # callExpr
  | INT                                                                # intExpr
  | ID                                                                 # nameExpr
  | op=('-' | '!') operand=expr                                        # unaryExpr
  | lhs=expr op=('*' | '/' | '%') rhs=expr                             # binaryExpr
  | lhs=expr op=('+' | '-') rhs=expr                                   # binaryExpr
  | lhs=expr op=('<' | '<=' | '>' | '>=') rhs=expr                     # binaryExpr
  | lhs=expr op=('==' | '!=') rhs=expr                                 # binaryExpr
  | lhs=expr op='&&' rhs=expr                                          # binaryExpr
  | lhs=expr op='||' rhs=expr                                          # binaryExpr
  | <assoc=right> cond=expr '?' then=expr ':' otherwise=expr           # conditionalExpr
  ;

// ---- lexer ----
// Named so the front end can refer to them in targeted messages.
SEMI         : ';' ;
LBRACE       : '{' ;
RBRACE       : '}' ;
AMPAMP       : '&&' ;
AMP          : '&' ;

SCHEDULE     : 'schedule' ;
REQUIRE      : 'require' ;
RANKS        : 'ranks' ;
STAGES       : 'stages' ;
MICROBATCHES : 'microbatches' ;
COPIES       : 'copies' ;
PLACE        : 'place' ;
STAGE        : 'stage' ;
RANK         : 'rank' ;
CHUNK        : 'chunk' ;
FLOW         : 'flow' ;
COSTS        : 'costs' ;
LET          : 'let' ;
FOR          : 'for' ;
IN           : 'in' ;
IF           : 'if' ;
ELSE         : 'else' ;
MB           : 'mb' ;
DOMAIN       : 'domain' ;
IMPORT       : 'import' ;
DEF          : 'def' ;
TABLE        : 'table' ;
SIZES        : 'sizes' ;
SQUEEZE      : 'squeeze' ;

ID           : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT        : [0-9]+ '.' [0-9]+ ([eE] [+-]? [0-9]+)? ;
INT          : [0-9]+ ;
STRING       : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;

// Comments are hidden, not skipped: the parser never sees them, `pipec fmt` keeps them.
LINE_COMMENT  : '//' ~[\r\n]* -> channel(HIDDEN) ;
BLOCK_COMMENT : '/*' .*? '*/' -> channel(HIDDEN) ;
WS            : [ \t\r\n]+ -> skip ;

// Malformed tokens: kept (off the parser's channel) so the front end reports them
// with a precise message instead of a cascade of syntax errors.
UNTERMINATED_STRING  : '"' (~["\\\r\n] | '\\' ~[\r\n])* ('\\')? -> channel(HIDDEN) ;
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* EOF -> channel(HIDDEN) ;
